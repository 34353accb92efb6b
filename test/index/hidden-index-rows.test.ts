import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { INDEX_ROW_CAP } from '../../protocol/index/sql.ts';
import { OPERATIONS } from '../../protocol/operations.ts';
import { DatabaseError } from '../../storage/database-error.ts';
import {
  bindScope,
  INDEX_SCOPES,
  scopedQuery,
  SCOPE_VIEWS,
  type IndexScope,
} from '../../storage/index/index-scope.ts';
import { callJson as call } from '../helpers/http.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import { postListing } from '../helpers/store.ts';
import { newWorkspace, saveFile, type TestAgent } from '../helpers/workspaces.ts';
import { sqlTimeoutMs } from '../../actors/index/queries.ts';

/**
 * Hidden stays hidden, whatever the query (issue 32 §3): a suspended agent's public workspace
 * and a listing the operator hid leave every scope of the index, and no filter of another
 * agent's is ever evaluated on their rows. Every relation an agent may name is read from the
 * catalogue (the views of schema agent_index, in every scope the code defines) and each of its
 * columns is probed three ways: a LEAKPROOF function that fails on meeting a hidden value (the
 * planner may run such a function anywhere, even below a security barrier), the division by
 * zero of the reported attack, and a function that is not LEAKPROOF and records every value it
 * is shown. The probes are made here as the database's superuser; they are called exactly as
 * runIndexQuery wraps and runs an agent's query (the policy, which would refuse their names,
 * aside).
 */
const test = serverSuite<{ operatorToken: string; world: World }>(
  'hidden stays hidden, whatever the query',
  () => {
    const operatorToken = newToken();
    // `world` is filled in by the suite's before().
    return {
      extra: { operatorToken, world: undefined as unknown as World },
      config: { operatorToken },
    };
  },
);

const SECRET = 'quagmirexylo';

interface World {
  /** Suspended: its public workspace, its listing and its name carry the secret. */
  suspended: TestAgent & { workspaceId: string; listingId: string };
  /** Its listing (secret-bearing) is hidden; it stays unsuspended. */
  author: TestAgent & { workspaceId: string; listingId: string; path: string };
  attacker: TestAgent;
  /** Values only the hidden rows hold: a probe that meets one has met a hidden row. */
  markers: string[];
}

const SECRET_FILE = `---\nconvention: local-services\ncity: ${SECRET}\nprice: 7\npw_x: ${SECRET}\n---\nThe word is ${SECRET}.\n`;

const secretListing = (kind: 'can' | 'need') => ({
  kind,
  convention: 'local-services',
  name: `Repair ${SECRET}`,
  description: `Repair, ask for ${SECRET}.`,
  [kind]: `repair ${SECRET}`,
  dimensions: { service: `repair ${SECRET}`, location: SECRET },
});

/** Probes over any column; made after the world, when its hidden values are known. */
function probes(markers: string[]): string {
  const pattern = markers.map((m) => m.replace(/[^a-z0-9-]/gi, '')).join('|');
  return `
create schema if not exists hidden_probe;
grant usage on schema hidden_probe to public;
create or replace function hidden_probe.leakproof_ok(value anyelement) returns boolean
  language plpgsql immutable leakproof cost 0.0001 as $$
begin
  if value::text ~* '${pattern}' then raise exception 'the probe met a hidden row'; end if;
  return true;
end $$;
create or replace function hidden_probe.record(value anyelement) returns boolean
  language plpgsql stable cost 0.0001 as $$
begin
  perform set_config('hidden_probe.seen',
    coalesce(current_setting('hidden_probe.seen', true), '') || value::text || chr(10), true);
  return true;
end $$;
grant execute on all functions in schema hidden_probe to public;`;
}

/** The three probes of one column, as the filter an agent would write. */
function filters(column: string, markers: string[]): Record<string, string> {
  const pattern = markers.join('|');
  return {
    leakproof: `hidden_probe.leakproof_ok(${column})`,
    'division by zero': `1 / (case when ${column}::text ~* '${pattern}' then 0 else 1 end) = 1`,
    recorder: `hidden_probe.record(${column})`,
  };
}

/** The relations agents name and the scopes they run in, as the catalogue has them. */
async function catalogue(server: TestServer) {
  const views = await server.services.driver.query<{ view: string; columns: string[] }>(
    `select c.relname as view, array_agg(a.attname::text order by a.attnum) as columns
     from pg_class c join pg_attribute a on a.attrelid = c.oid and a.attnum > 0
     where c.relnamespace = 'agent_index'::regnamespace and c.relkind = 'v'
     group by c.relname order by c.relname`,
  );
  const cases: { relation: string; scope: IndexScope; view: string; columns: string[] }[] = [];
  for (const { view, columns } of views) {
    const scope = INDEX_SCOPES.find((s) => view.endsWith(`_${s}`));
    const relation = scope ? view.slice(0, -scope.length - 1) : view;
    // A view of no scope (the store) is the same relation in every scope.
    for (const s of scope ? [scope] : INDEX_SCOPES)
      cases.push({ relation, scope: s, view, columns });
  }
  return { views: views.map((v) => v.view), cases };
}

/** Runs `sql` for `caller` as runIndexQuery runs it; answers what the recorder saw too. */
async function asAgent(server: TestServer, caller: string, sql: string, scope: IndexScope) {
  const { services } = server;
  return services.driver.transaction(
    async (tx) => {
      await tx.query(bindScope(services.indexReaderRole && !services.indexReaderLogin), [caller]);
      const rows = await tx.query(scopedQuery(sql, scope, INDEX_ROW_CAP));
      const [seen] = await tx.query<{ seen: string | null }>(
        "select current_setting('hidden_probe.seen', true) as seen",
      );
      return { rows, seen: seen?.seen ?? '' };
    },
    { readOnly: true, pool: 'agents', timeoutMs: sqlTimeoutMs(services) },
  );
}

/** 'clean', or what showed that the probe met a hidden row. */
async function probe(
  server: TestServer,
  caller: string,
  sql: string,
  scope: IndexScope,
  markers: string[],
): Promise<string> {
  try {
    const { seen } = await asAgent(server, caller, sql, scope);
    const met = markers.filter((m) => seen.toLowerCase().includes(m.toLowerCase()));
    return met.length === 0 ? 'clean' : `recorded ${met.join(', ')}`;
  } catch (error) {
    if (error instanceof DatabaseError) return error.message;
    throw error;
  }
}

/** Every probe of every column of every relation in every scope, for `caller`. */
async function everyProbe(server: TestServer, caller: string, markers: string[]) {
  const met: string[] = [];
  let ran = 0;
  for (const { relation, scope, columns } of (await catalogue(server)).cases) {
    for (const column of columns) {
      for (const [kind, where] of Object.entries(filters(column, markers))) {
        const sql = `select count(*) from ${relation} where ${where}`;
        const result = await probe(server, caller, sql, scope, markers);
        ran += 1;
        if (result !== 'clean') met.push(`${scope} ${relation}.${column} (${kind}): ${result}`);
      }
    }
  }
  return { met, ran };
}

const act = (server: TestServer, token: string, path: string) =>
  call(server, 'POST', path, token, { reason: 'Issue 32 test.' });

/** The reported attack, through the real door: scope public, a right and a wrong guess. */
async function guess(server: TestServer, attacker: TestAgent, prefix: string) {
  return call<{ rows?: unknown[][]; code?: string }>(
    server,
    'POST',
    '/index/sql',
    attacker.api_token,
    {
      scope: 'public',
      sql: `select count(*) from files where 1/(case when fields->>'pw_x' like '${prefix}%' then 0 else 1 end) = 1`,
    },
  );
}

test.before(async (context) => {
  const { server } = context;
  const suspendedAgent = await server.signUp(`victim ${SECRET}`);
  const author = await server.signUp();
  const attacker = await server.signUp();
  const suspendedSpace = await newWorkspace(server, suspendedAgent, 'public');
  await saveFile(server, suspendedAgent, suspendedSpace, `vault-${SECRET}.md`, SECRET_FILE);
  await saveFile(server, suspendedAgent, suspendedSpace, `vault-${SECRET}.md`, `${SECRET_FILE}\n`);
  const suspendedListing = await postListing(server, suspendedAgent, secretListing('can'));
  assert.is(suspendedListing.status, 201, JSON.stringify(suspendedListing.body));
  const hiddenListing = await postListing(server, author, secretListing('need'));
  assert.is(hiddenListing.status, 201, JSON.stringify(hiddenListing.body));
  // Rows of every kind around them, so the planner has choices to make.
  const open = await newWorkspace(server, attacker, 'public');
  const mine = await newWorkspace(server, attacker);
  for (let i = 0; i < 3; i++) {
    const card = `---\nconvention: local-services\ncity: Berlin\nprice: 7\n---\nBike repair ${i}.\n`;
    await saveFile(server, attacker, open, `cards/${i}.md`, card);
    await saveFile(server, attacker, mine, `notes/${i}.md`, card);
    await saveFile(server, author, hiddenListing.body.workspace_id, `notes/${i}.md`, card);
  }
  const shown = await postListing(server, attacker, {
    kind: 'can',
    convention: 'local-services',
    name: 'Bike repair',
    description: 'Bike repair, fast.',
    can: 'bike repair',
    dimensions: { service: 'bike repair', location: 'Berlin' },
  });
  assert.is(shown.status, 201, JSON.stringify(shown.body));
  await server.services.driver.query('analyze');
  const markers = [
    SECRET,
    suspendedAgent.agent_id,
    suspendedSpace,
    suspendedListing.body.workspace_id,
    suspendedListing.body.listing_id,
    hiddenListing.body.listing_id,
    hiddenListing.body.path,
  ];
  await server.services.driver.script(probes(markers));
  context.world = {
    suspended: {
      ...suspendedAgent,
      workspaceId: suspendedSpace,
      listingId: suspendedListing.body.listing_id,
    },
    author: {
      ...author,
      workspaceId: hiddenListing.body.workspace_id,
      listingId: hiddenListing.body.listing_id,
      path: hiddenListing.body.path,
    },
    attacker,
    markers,
  };
});

test('every view agents may name is in the catalogue, granted to the reader, and nothing else is', async ({
  server,
}) => {
  const { views } = await catalogue(server);
  assert.equal(
    views.map((v) => `agent_index.${v}`),
    [...SCOPE_VIEWS].sort(),
  );
  const scopes = OPERATIONS.query_index.input.shape.scope.unwrap().options;
  assert.equal([...scopes].sort(), [...INDEX_SCOPES].sort(), 'the scopes the protocol offers');
  if (!server.services.indexReaderRole) return;
  const readable = await server.services.driver.query<{ name: string }>(
    `select n.nspname || '.' || c.relname as name from pg_class c
     join pg_namespace n on n.oid = c.relnamespace
     where n.nspname not in ('pg_catalog', 'information_schema') and c.relkind in ('r', 'p', 'v', 'm')
       and has_table_privilege('agent_index_reader', c.oid, 'select')
     order by 1`,
  );
  assert.equal(
    readable.map((r) => r.name),
    [...SCOPE_VIEWS].sort(),
  );
});

test('before the operator acts, the probes do meet those rows: a silent probe later means it never met one', async ({
  server,
  world,
}) => {
  const sql = `select count(*) from files where ${filters('fields', world.markers).leakproof}`;
  const found = await probe(server, world.attacker.agent_id, sql, 'public', world.markers);
  assert.match(found, /the probe met a hidden row/);
  const recorded = await probe(
    server,
    world.attacker.agent_id,
    `select count(*) from store where ${filters('listing_id', world.markers).recorder}`,
    'store',
    world.markers,
  );
  assert.match(recorded, /recorded/);
  assert.is((await guess(server, world.attacker, SECRET.slice(0, 1))).status, 400);
});

test('the operator suspends one agent and hides another’s listing', async ({
  server,
  operatorToken,
  world,
}) => {
  const suspended = await act(
    server,
    operatorToken,
    `/operator/agents/${world.suspended.agent_id}/suspend`,
  );
  assert.is(suspended.status, 200, JSON.stringify(suspended.body));
  const hidden = await act(
    server,
    operatorToken,
    `/operator/listings/${world.author.listingId}/hide`,
  );
  assert.is(hidden.status, 200, JSON.stringify(hidden.body));
  // A version saved while hidden is withheld from its first moment too.
  const url = `/workspaces/${world.author.workspaceId}/files/${world.author.path}`;
  const text = await (await server.get(url, world.author.api_token)).text();
  await saveFile(
    server,
    world.author,
    world.author.workspaceId,
    world.author.path,
    `${text}\nStill ${SECRET}.\n`,
  );
});

test('the reported attack answers the same for a right guess as for a wrong one: every file in reach, and none of the hidden ones', async ({
  server,
  world,
}) => {
  const all = await call<{ rows?: unknown[][] }>(
    server,
    'POST',
    '/index/sql',
    world.attacker.api_token,
    { scope: 'public', sql: 'select count(*) from files' },
  );
  assert.is(all.status, 200, JSON.stringify(all.body));
  for (const prefix of [SECRET.slice(0, 1), SECRET.slice(0, 4), 'z']) {
    const answer = await guess(server, world.attacker, prefix);
    assert.is(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.rows, all.body.rows, prefix);
  }
});

test('no probe of any column of any relation in any scope meets a suspended agent’s or a hidden listing’s row', async ({
  server,
  world,
}) => {
  const { met, ran } = await everyProbe(server, world.attacker.agent_id, world.markers);
  assert.equal(met, [], met.join('\n'));
  // Four relations in three scopes, about a dozen columns each, three probes per column.
  assert.ok(ran > 300, `ran ${ran}`);
});

test('the hidden listing’s author still finds its file in scope own, and the store does not show it', async ({
  server,
  world,
}) => {
  const mine = await asAgent(
    server,
    world.author.agent_id,
    `select count(*)::int as n from files where path = '${world.author.path}'`,
    'own',
  );
  assert.equal(mine.rows, [{ n: 1 }]);
  const store = await asAgent(
    server,
    world.author.agent_id,
    `select count(*)::int as n from store where listing_id = '${world.author.listingId}'`,
    'own',
  );
  assert.equal(store.rows, [{ n: 0 }]);
  // And the probes do meet it there, for the author alone: its own rows are in its reach.
  const sql = `select count(*) from files where ${filters('fields', world.markers).leakproof}`;
  assert.match(
    await probe(server, world.author.agent_id, sql, 'own', world.markers),
    /the probe met a hidden row/,
  );
});

test('a hidden listing’s file answers 404 to others, as a missing file, and 200 to its author', async ({
  server,
  world,
}) => {
  const { workspaceId, path } = world.author;
  const url = `/workspaces/${workspaceId}/files/${path}`;
  const other = await call<{ code?: string }>(server, 'GET', url, world.attacker.api_token);
  const missing = await call<{ code?: string }>(
    server,
    'GET',
    `/workspaces/${workspaceId}/files/no-such-file.md`,
    world.attacker.api_token,
  );
  assert.is(other.status, 404);
  assert.equal(other.body, missing.body);
  const version = await call(server, 'GET', `${url}?version=1`, world.attacker.api_token);
  assert.is(version.status, 404);
  const head = await fetch(server.url(url), {
    method: 'HEAD',
    headers: { authorization: `Bearer ${world.attacker.api_token}` },
  });
  assert.is(head.status, 404);
  assert.is((await server.get(url, world.author.api_token)).status, 200);
  // Its other files are as readable as ever.
  const note = `/workspaces/${workspaceId}/files/notes/0.md`;
  assert.is((await server.get(note, world.attacker.api_token)).status, 200);
});

test('in the database, no shown row is withheld and no withheld row is shown', async ({
  server,
}) => {
  const misplaced = await server.services.driver.query(
    `select workspace_id, path, withheld from indexed_versions
     where visibility = 'public' and withheld <> index_row_withheld(workspace_id, path, visibility)`,
  );
  assert.equal(misplaced, []);
});

test('restore_agent and show_listing put every row back in reach, and the file back to 200', async ({
  server,
  operatorToken,
  world,
}) => {
  assert.is(
    (await act(server, operatorToken, `/operator/agents/${world.suspended.agent_id}/restore`))
      .status,
    200,
  );
  assert.is(
    (await act(server, operatorToken, `/operator/listings/${world.author.listingId}/show`)).status,
    200,
  );
  const counted = await asAgent(
    server,
    world.attacker.agent_id,
    `select count(*)::int as n from files where fields::text like '%${SECRET}%'`,
    'public',
  );
  // The suspended agent's vault and its listing, and the author's listing.
  assert.equal(counted.rows, [{ n: 3 }]);
  const store = await asAgent(
    server,
    world.attacker.agent_id,
    `select count(*)::int as n from store where name like '%${SECRET}%'`,
    'store',
  );
  assert.equal(store.rows, [{ n: 2 }]);
  const url = `/workspaces/${world.author.workspaceId}/files/${world.author.path}`;
  assert.is((await server.get(url, world.attacker.api_token)).status, 200);
  assert.is((await guess(server, world.attacker, SECRET.slice(0, 1))).status, 400);
});

test.run();
