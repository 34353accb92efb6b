import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { prepareIndex } from '../../actors/index/setup.ts';
import { INDEX_ROW_CAP } from '../../protocol/index/sql.ts';
import { DatabaseError } from '../../storage/database-error.ts';
import { bindScope, scopedQuery, type IndexScope } from '../../storage/index/index-scope.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { joinWorkspace, newWorkspace, saveFile, type TestAgent } from '../helpers/workspaces.ts';
import { sqlTimeoutMs } from '../../actors/index/queries.ts';

/**
 * An agent's filter never runs on a row its scope hides: not even a function the planner takes
 * for LEAKPROOF (which it may otherwise run below a security barrier, or as an index search
 * over every row, where the time it takes tells what the hidden rows hold). The probe is a
 * function made here, as the database's superuser, that fails on the hidden file's secret
 * word: it stands for any function the planner trusts, as the service once marked
 * ts_match_vq and the jsonb field functions. It is called in the agent's query exactly as
 * runIndexQuery wraps and runs it (the policy, which would refuse the function's name, aside).
 */
const test = suite<{ server: TestServer; world: World }>(
  'an agent’s filter never meets a row out of its reach',
);

interface World {
  victim: TestAgent;
  attacker: TestAgent;
  /** A private workspace of the victim's that the attacker's friend shares with the attacker. */
  shared: string;
}

const SECRET = 'zanzibarquux';
/** The hidden file: its header, its body and its full-text words all carry the secret. */
const HIDDEN_FILE = `---\nconvention: local-services\ncity: ${SECRET}\nprice: 7\nsecret: ${SECRET}\n---\nThe word is ${SECRET}.\n`;

/** Probes for each column type an agent filters on; each fails when it meets the secret. */
const PROBES = `
create schema if not exists leak_probe;
grant usage on schema leak_probe to public;
create or replace function leak_probe.text_ok(value text) returns boolean
  language plpgsql immutable leakproof cost 0.0001 as $$
begin
  if value like '%${SECRET}%' then raise exception 'the probe met the hidden row'; end if;
  return true;
end $$;
create or replace function leak_probe.jsonb_ok(value jsonb) returns boolean
  language plpgsql immutable leakproof cost 0.0001 as $$
begin
  if value::text like '%${SECRET}%' then raise exception 'the probe met the hidden row'; end if;
  return true;
end $$;
create or replace function leak_probe.tsvector_ok(value tsvector) returns boolean
  language plpgsql immutable leakproof cost 0.0001 as $$
begin
  if value::text like '%${SECRET}%' then raise exception 'the probe met the hidden row'; end if;
  return true;
end $$;
grant execute on all functions in schema leak_probe to public;`;

/** Every relation an agent's SQL may name, and a filter on each of its secret-bearing columns. */
const QUERIES = [
  "select count(*) from files where leak_probe.text_ok(fields->>'secret')",
  'select count(*) from files where leak_probe.jsonb_ok(fields)',
  'select count(*) from files where leak_probe.text_ok(body)',
  'select count(*) from files where leak_probe.tsvector_ok(search)',
  'select count(*) from files where leak_probe.text_ok(path) and fields @> \'{"price": 7}\'',
  'select count(*) from file_versions where leak_probe.text_ok(body)',
  'select count(*) from file_versions where leak_probe.tsvector_ok(search)',
  'select count(*) from file_versions where leak_probe.jsonb_ok(fields)',
  'select count(*) from axis_values where leak_probe.text_ok(value)',
  'select count(*) from store where leak_probe.jsonb_ok(dimensions)',
  'select count(*) from store where leak_probe.tsvector_ok(search)',
];
const SCOPES: IndexScope[] = ['own', 'public', 'store'];

/** Runs `sql` for `caller` as runIndexQuery runs it: scope CTEs, binding, role, agents' pool. */
async function asAgent(server: TestServer, caller: string, sql: string, scope: IndexScope) {
  const { services } = server;
  return services.driver.transaction(
    async (tx) => {
      await tx.query(bindScope(services.indexReaderRole && !services.indexReaderLogin), [caller]);
      return tx.query(scopedQuery(sql, scope, INDEX_ROW_CAP));
    },
    { readOnly: true, pool: 'agents', timeoutMs: sqlTimeoutMs(services) },
  );
}

/** 'ran', or the database's refusal. */
async function outcome(work: Promise<unknown>): Promise<string> {
  try {
    await work;
    return 'ran';
  } catch (error) {
    if (error instanceof DatabaseError) return error.message;
    throw error;
  }
}

test.before(async (context) => {
  context.server = await startTestServer();
  const { server } = context;
  await server.services.driver.script(PROBES);
  const victim = await server.signUp();
  const attacker = await server.signUp();
  const friend = await server.signUp();
  // The hidden file, and enough rows of every kind around it for the planner to choose indexes.
  const hidden = await newWorkspace(server, victim);
  await saveFile(server, victim, hidden, 'vault.md', HIDDEN_FILE);
  await saveFile(server, victim, hidden, 'vault.md', HIDDEN_FILE.replace('price: 7', 'price: 8'));
  const open = await newWorkspace(server, attacker, 'public');
  const mine = await newWorkspace(server, attacker);
  const shared = await newWorkspace(server, friend);
  await joinWorkspace(server, friend, attacker, shared);
  for (let i = 0; i < 3; i++) {
    const card = `---\nconvention: local-services\ncity: Berlin\nprice: 7\n---\nBike repair ${i}.\n`;
    await saveFile(server, attacker, open, `cards/${i}.md`, card);
    await saveFile(server, attacker, mine, `notes/${i}.md`, card);
    await saveFile(server, friend, shared, `notes/${i}.md`, card);
  }
  const listing = {
    kind: 'can',
    convention: 'local-services',
    name: 'Bike repair',
    description: 'Bike repair, fast.',
    can: 'bike repair',
    dimensions: { service: 'bike repair', location: 'Berlin' },
  };
  const listed = await server.post('/listings', listing, attacker.api_token);
  assert.is(listed.status, 201, await listed.clone().text());
  // Statistics that say how small the tables are: the planner then reads them whole, where a
  // filter it may reorder would meet every row the scope's condition has not yet left out.
  await server.services.driver.query('analyze');
  context.world = { victim, attacker, shared };
});
test.after(async ({ server }) => {
  await server.close();
});

test('the probes do fail on the hidden row for its owner, so a silent answer means they never met it', async ({
  server,
  world,
}) => {
  const failed = await outcome(asAgent(server, world.victim.agent_id, QUERIES[0] as string, 'own'));
  assert.match(failed, /the probe met the hidden row/);
});

for (const scope of SCOPES) {
  test(`in scope ${scope}, no filter of another agent's is ever evaluated on the hidden file`, async ({
    server,
    world,
  }) => {
    const met: string[] = [];
    for (const sql of QUERIES) {
      const result = await outcome(asAgent(server, world.attacker.agent_id, sql, scope));
      if (result !== 'ran') met.push(`${sql}: ${result}`);
    }
    assert.equal(met, [], met.join('\n'));
  });
}

test('a member’s filter meets the rows of the workspaces it shares, and no others', async ({
  server,
  world,
}) => {
  const [row] = await asAgent(
    server,
    world.attacker.agent_id,
    "select count(*)::int as n from files where leak_probe.text_ok(body) and body like 'Bike%'",
    'own',
  );
  // Its own notes and cards, and the notes its friend shares with it.
  assert.equal(row, { n: 9 });
  assert.ok(world.shared);
});

test('the service takes back the LEAKPROOF marks it once made on built-in functions', async ({
  server,
}) => {
  const marked = `select p.oid::regprocedure::text as name from pg_proc p
    where p.oid in ('pg_catalog.ts_match_vq(tsvector, tsquery)'::regprocedure,
      'pg_catalog.jsonb_object_field_text(jsonb, text)'::regprocedure,
      'pg_catalog.jsonb_object_field(jsonb, text)'::regprocedure,
      'pg_catalog.jsonb_contains(jsonb, jsonb)'::regprocedure)
    and p.proleakproof order by 1`;
  const { driver } = server.services;
  // As an earlier version of the service left them on an existing database.
  await driver.script(`alter function pg_catalog.ts_match_vq(tsvector, tsquery) leakproof;
    alter function pg_catalog.jsonb_object_field_text(jsonb, text) leakproof;
    alter function pg_catalog.jsonb_object_field(jsonb, text) leakproof;
    alter function pg_catalog.jsonb_contains(jsonb, jsonb) leakproof;`);
  assert.is((await driver.query(marked)).length, 4);
  await prepareIndex(server.services, () => undefined);
  assert.equal(await driver.query(marked), []);
});

test.run();
