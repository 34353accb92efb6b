import * as assert from 'uvu/assert';
import { lasting } from '../../actors/kernel/lasting-answer.ts';
import { RecordCache } from '../../actors/deals/record-cache.ts';
import { forgetRecordChanges } from '../../storage/deals/record-changes.ts';
import type { Driver } from '../../storage/driver.ts';
import { agreeAll, dealRoom, rate, reputationOf } from '../helpers/deals.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';

/**
 * A public record a process computed is answered again while nothing it shows changed
 * (actors/deals/record-cache.ts): the database notes, by triggers, which transactions changed
 * whose record (storage/migrations/049_agent_record_changes.sql). These tests hold the class:
 * every table the record's statements read is found from the statements themselves, and each
 * must note its changes, so a table a later change joins in cannot serve a stale record.
 */
const test = serverSuite('deals: the records a process keeps');

/** The statements `run` sends through the driver, with their parameters. */
async function statementsOf(server: TestServer, run: () => Promise<unknown>) {
  const driver = server.services.driver as Driver & { query: Driver['query'] };
  const seen: { text: string; params: unknown[] }[] = [];
  const query = driver.query;
  driver.query = ((text: string, params?: unknown[]) => {
    seen.push({ text, params: params ?? [] });
    return query.call(driver, text, params);
  }) as Driver['query'];
  try {
    await run();
  } finally {
    driver.query = query;
  }
  return seen;
}

/** A deal of two agreed, the second party's rating of the first on record. */
async function ratedDeal(server: TestServer) {
  const { workspaceId, parties, at } = await dealRoom(server);
  const [maker, rater] = parties as [(typeof parties)[0], (typeof parties)[0]];
  const dealId = await agreeAll(server, [maker, rater], workspaceId, at);
  const rated = await rate(server, rater, dealId, maker, { score: 4, comment: 'fine' });
  assert.is(rated.status, 201, JSON.stringify(rated.body));
  return { maker, rater, dealId, ratingId: rated.body.rating_id };
}

interface PlanNode {
  'Relation Name'?: string;
  Alias?: string;
  Output?: string[];
  Plans?: PlanNode[];
  [condition: string]: unknown;
}

/** Each relation a plan scans, with the columns the plan reads of it. */
function relationsRead(node: PlanNode, into: Map<string, Set<string>>): void {
  const relation = node['Relation Name'];
  if (relation && node.Alias) {
    const columns = into.get(relation) ?? new Set<string>();
    const said = [
      ...(node.Output ?? []),
      ...['Filter', 'Index Cond', 'Recheck Cond'].map((key) => String(node[key] ?? '')),
    ].join(' ');
    const alias = node.Alias.replace(/[^\w]/g, '');
    for (const match of said.matchAll(new RegExp(`\\b${alias}\\.(\\w+)`, 'g')))
      columns.add(match[1] as string);
    into.set(relation, columns);
  }
  for (const child of node.Plans ?? []) relationsRead(child, into);
}

/**
 * Columns no statement changes once the row is written: a record may read them without its
 * table's update trigger naming them.
 */
const WRITTEN_ONCE: Record<string, readonly string[]> = {
  agents: ['agent_id', 'created_at'],
  deals: ['deal_id'],
};

test('every table the record reads notes its inserts, updates and deletes, of every column the record reads', async ({
  server,
}) => {
  const { maker } = await ratedDeal(server);
  server.services.reputationRecords.forget(maker.agent_id);
  const statements = await statementsOf(server, () => reputationOf(server, maker));
  const driver = server.services.driver;
  const read = new Map<string, Set<string>>();
  for (const { text, params } of statements) {
    const [row] = await driver.query<Record<string, unknown>>(
      `explain (verbose, format json) ${text}`,
      params,
    );
    const value = Object.values(row ?? {})[0];
    const plan = (typeof value === 'string' ? JSON.parse(value) : value) as { Plan: PlanNode }[];
    relationsRead(plan[0]!.Plan, read);
  }
  read.delete('agent_record_changes');
  for (const expected of ['agents', 'agent_reputation', 'deal_ratings', 'deals', 'payments'])
    assert.ok(read.has(expected), `the record reads ${expected}: ${[...read.keys()].join(', ')}`);

  const triggers = await driver.query<{ relname: string; tgtype: number; columns: string[] }>(
    `select c.relname, t.tgtype,
       array(select a.attname::text from unnest(t.tgattr::int2[]) k
             join pg_attribute a on a.attrelid = t.tgrelid and a.attnum = k) as columns
     from pg_trigger t join pg_class c on c.oid = t.tgrelid join pg_proc p on p.oid = t.tgfoid
     where p.proname = 'note_agent_record_change' and not t.tgisinternal`,
  );
  const ROW = 1,
    BEFORE = 2,
    INSERT = 4,
    DELETE = 8,
    UPDATE = 16;
  for (const [relation, columns] of read) {
    const own = triggers.filter((t) => t.relname === relation);
    assert.ok(
      own.length > 0,
      `${relation} is read by the record and has no trigger noting changes`,
    );
    for (const t of own) {
      assert.ok(t.tgtype & ROW && !(t.tgtype & BEFORE), `${relation}: an after trigger per row`);
    }
    const events = own.reduce((all, t) => all | t.tgtype, 0);
    for (const [bit, event] of [
      [INSERT, 'insert'],
      [UPDATE, 'update'],
      [DELETE, 'delete'],
    ] as const) {
      assert.ok(events & bit, `${relation}: its ${event}s are not noted`);
    }
    for (const t of own.filter((t) => t.tgtype & UPDATE && t.columns.length > 0)) {
      const unnoted = [...columns].filter(
        (column) => !t.columns.includes(column) && !WRITTEN_ONCE[relation]?.includes(column),
      );
      assert.equal(unnoted, [], `${relation}: the record reads columns its trigger does not watch`);
    }
  }
});

test('a kept record is answered after one statement; a write to what it shows, by any writer, is in the next answer', async ({
  server,
}) => {
  const { maker, rater, dealId, ratingId } = await ratedDeal(server);
  const driver = server.services.driver;
  const first = await reputationOf(server, maker);
  let again: Awaited<ReturnType<typeof reputationOf>> | undefined;
  const kept = await statementsOf(server, async () => (again = await reputationOf(server, maker)));
  assert.equal(again, first);
  assert.is(kept.length, 1, 'the stamp alone');

  // Written straight to the tables, as another process (or a later capability) would.
  const shows = async (write: string, params: unknown[], check: (r: typeof first) => unknown) => {
    await driver.query(write, params);
    let after: typeof first | undefined;
    const computed = await statementsOf(
      server,
      async () => (after = await reputationOf(server, maker)),
    );
    assert.ok(computed.length > 1, `computed again after: ${write}`);
    return check(after!);
  };
  assert.is(
    await shows(
      'update agents set name = $2 where agent_id = $1',
      [rater.agent_id, 'renamed'],
      (r) => [r.ratings[0]?.rater.name, r.counterparties[0]?.name].join(),
    ),
    'renamed,renamed',
  );
  assert.is(
    await shows(
      'update agents set name = $2 where agent_id = $1',
      [maker.agent_id, 'me, renamed'],
      (r) => r.name,
    ),
    'me, renamed',
  );
  assert.is(
    await shows(
      'update deal_ratings set comment = $2 where rating_id = $1',
      [ratingId, 'edited'],
      (r) => r.ratings[0]?.comment,
    ),
    'edited',
  );
  assert.is(
    await shows(
      'update deals set payment_final = true where deal_id = $1',
      [dealId],
      (r) => r.ratings[0]?.payment_backed,
    ),
    true,
  );
  assert.is(
    await shows(
      `insert into agent_payment_counts (agent_id, payments_made) values ($1, 3)
       on conflict (agent_id) do update set payments_made = 3`,
      [maker.agent_id],
      (r) => r.counts.payments_made,
    ),
    3,
  );
  // And through the door: the rater corrects its rating.
  assert.is(
    (await rate(server, rater, dealId, maker, { score: 5, comment: 'better' })).status,
    201,
  );
  const corrected = await reputationOf(server, maker);
  assert.equal(
    corrected.ratings.map((r) => [r.score, r.comment]),
    [[5, 'better']],
  );
});

test('an agent that is not signed up is not found, also right after its record was kept', async ({
  server,
}) => {
  const { maker } = await ratedDeal(server);
  await reputationOf(server, maker);
  const unknown = await fetch(server.url(`/agents/${crypto.randomUUID()}/reputation`));
  assert.is(unknown.status, 404);
  assert.is(((await unknown.json()) as { code: string }).code, 'not_found');
});

test('the records a process keeps stay within their bytes, the least recently served dropped first, and a snapshot is trusted for its time only', () => {
  const record = (n: number) => lasting({ n, text: 'x'.repeat(1_000) });
  const cache = new RecordCache(3_500, 60_000);
  cache.keep('a', 's1', 0, record(1));
  cache.keep('b', 's1', 0, record(2));
  cache.keep('c', 's1', 0, record(3));
  assert.is(cache.size.records, 3);
  assert.ok(cache.unchanged('a', 's2', 10), 'a served: now the most recent');
  cache.keep('d', 's2', 10, record(4));
  assert.ok(cache.size.bytes <= 3_500, `${cache.size.bytes} bytes`);
  assert.is(cache.snapshotOf('b', 10), null, 'b, least recently served, dropped');
  assert.is(
    cache.snapshotOf('a', 10),
    's2',
    'kept beside the snapshot it was last found unchanged in',
  );
  assert.is(cache.snapshotOf('a', 60_011), null, 'past its trust: dropped');
  assert.is(cache.size.records, 2);
  cache.keep('big', 's3', 0, lasting({ text: 'x'.repeat(10_000) }));
  assert.is(cache.snapshotOf('big', 0), null, 'a record larger than the whole budget is not kept');
});

test('the notes of changes older than the cut are forgotten, the newer kept', async ({
  server,
}) => {
  const { maker } = await ratedDeal(server);
  const driver = server.services.driver;
  await driver.query(
    `insert into agent_record_changes (agent_id, xid, changed_at)
     values ($1, '1'::xid8, now() - interval '2 hours')`,
    [maker.agent_id],
  );
  const count = async () =>
    (
      await driver.query<{ n: number }>(
        'select count(*)::int as n from agent_record_changes where agent_id = $1',
        [maker.agent_id],
      )
    )[0]!.n;
  const before = await count();
  assert.ok(before >= 2, `${before} notes`);
  assert.ok((await forgetRecordChanges(driver, new Date(Date.now() - 60 * 60_000))) >= 1);
  assert.is(await count(), before - 1);
});

test.run();
