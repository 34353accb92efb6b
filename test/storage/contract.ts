import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ServiceError } from '../../protocol/errors.ts';
import { findAgent, insertAgent, lockAgent, saveAgentState } from '../../storage/agents/agents.ts';
import { appendChanges, readChanges, readFeedHead } from '../../storage/kernel/changes.ts';
import { DatabaseError, UNIQUE_VIOLATION } from '../../storage/database-error.ts';
import type { Driver } from '../../storage/driver.ts';
import { migrate } from '../../storage/migrate.ts';
import { openTestDriver, postgresSuite, type DriverKind } from '../helpers/storage.ts';

/** A suite for `kind`: one that needs PostgreSQL says so, and is counted when skipped. */
export function driverSuite<T>(kind: DriverKind, name: string) {
  return kind === 'postgres' ? postgresSuite<T>(name) : suite<T>(name);
}

/** The storage contract: every driver runs this same suite (HOUSE-STYLE.md). */
export function storageContract(kind: DriverKind): void {
  const test = driverSuite<{ driver: Driver }>(kind, `storage contract on ${kind}`);

  test.before(async (context) => {
    context.driver = await openTestDriver(kind);
  });
  test.after(async ({ driver }) => {
    await driver.close();
  });

  const newAgent = async (driver: Driver) => {
    const agentId = randomUUID();
    await driver.transaction((tx) => insertAgent(tx, { agentId, name: 'contract' }));
    return agentId;
  };

  test('migrating again applies nothing', async ({ driver }) => {
    assert.equal(await migrate(driver), []);
  });

  test('values come back as the same JS types on every driver', async ({ driver }) => {
    const [row] = await driver.query(
      `select 9007199254740991::int8 as big, now() as at, $1::text::jsonb as doc, $2::bytea as bytes,
              $3::uuid as id, true as yes, null::text as nothing`,
      [
        JSON.stringify({ a: [1, 'two'] }),
        Buffer.from([1, 2, 3]),
        '6f1c0a52-1b9e-4c1a-a0f4-2f6c8e9b1d20',
      ],
    );
    assert.is(row?.big, 9007199254740991);
    assert.instance(row?.at, Date);
    assert.equal(row?.doc, { a: [1, 'two'] });
    assert.instance(row?.bytes, Uint8Array);
    assert.equal([...(row?.bytes as Uint8Array)], [1, 2, 3]);
    assert.is(row?.id, '6f1c0a52-1b9e-4c1a-a0f4-2f6c8e9b1d20');
    assert.is(row?.yes, true);
    assert.is(row?.nothing, null);
  });

  test('a transaction that resolves is committed and read back at once', async ({ driver }) => {
    const agentId = await newAgent(driver);
    assert.is((await findAgent(driver, agentId))?.name, 'contract');
  });

  test('a transaction that rejects leaves nothing behind and rejects with the same error', async ({
    driver,
  }) => {
    const agentId = randomUUID();
    const refusal = new ServiceError('invalid_input', 'refused on purpose');
    const error = await driver
      .transaction(async (tx) => {
        await insertAgent(tx, { agentId, name: 'ghost' });
        throw refusal;
      })
      .catch((e: unknown) => e);
    assert.is(error, refusal);
    assert.is(await findAgent(driver, agentId), null);
  });

  test('a failed statement rolls back the whole transaction with its SQLSTATE', async ({
    driver,
  }) => {
    const agentId = await newAgent(driver);
    const other = randomUUID();
    const error = await driver
      .transaction(async (tx) => {
        await insertAgent(tx, { agentId: other, name: 'second' });
        await insertAgent(tx, { agentId, name: 'duplicate' });
      })
      .catch((e: unknown) => e);
    assert.instance(error, DatabaseError);
    assert.is((error as DatabaseError).sqlState, UNIQUE_VIOLATION);
    assert.is(await findAgent(driver, other), null);
    assert.ok(await driver.query('select 1'), 'the driver is usable afterwards');
  });

  test('changes are numbered per agent from 1, in order, and read back after a place', async ({
    driver,
  }) => {
    const a = await newAgent(driver);
    const b = await newAgent(driver);
    const stored = await driver.transaction((tx) =>
      appendChanges(tx, [
        { agentId: a, type: 'test.one', data: { n: 1 } },
        { agentId: b, type: 'test.one', data: { n: 1 } },
        { agentId: a, type: 'test.two', data: { n: 2 }, actor: { agent_id: b, name: 'b' } },
      ]),
    );
    assert.equal(
      stored.filter((s) => s.agentId === a).map((s) => s.seq),
      [1, 2],
    );
    assert.equal(
      stored.filter((s) => s.agentId === b).map((s) => s.seq),
      [1],
    );
    const read = await readChanges(driver, a, 1, 10);
    assert.equal(
      read.map((r) => r.event),
      stored.filter((s) => s.agentId === a && s.seq === 2).map((s) => s.event),
    );
    assert.equal(read[0]?.event.actor, { agent_id: b, name: 'b' });
    assert.is((await readFeedHead(driver, a))?.lastSeq, 2);
  });

  test('drafts sharing their data store it once per actor, and each reads back with its own actor and data', async ({
    driver,
  }) => {
    const [a, b, c] = [await newAgent(driver), await newAgent(driver), await newAgent(driver)];
    const shared = { listing: { name: `shared ${randomUUID()}` } };
    const first = { agent_id: a, name: 'first actor' };
    const second = { agent_id: b, name: 'second actor' };
    await driver.transaction((tx) =>
      appendChanges(tx, [
        { agentId: a, type: 'test.shared', data: { watch: 1 }, sharedData: shared, actor: first },
        { agentId: b, type: 'test.shared', data: { watch: 2 }, sharedData: shared, actor: second },
        { agentId: c, type: 'test.shared', data: { watch: 3 }, sharedData: shared, actor: first },
      ]),
    );
    const readBack = async (agentId: string) =>
      (await readChanges(driver, agentId, 0, 10))[0]?.event;
    const events = [await readBack(a), await readBack(b), await readBack(c)];
    assert.equal(
      events.map((e) => [e?.actor?.name, e?.data]),
      [
        ['first actor', { ...shared, watch: 1 }],
        ['second actor', { ...shared, watch: 2 }],
        ['first actor', { ...shared, watch: 3 }],
      ],
    );
    const [stored] = await driver.query<{ n: number }>(
      `select count(*)::int as n from change_payloads where data = $1::text::jsonb`,
      [JSON.stringify(shared)],
    );
    assert.is(stored?.n, 2, 'one payload per actor');
  });

  test('drafts that each tell another agent move every head by one, whether they share one kind or each has its own', async ({
    driver,
  }) => {
    const agents = [await newAgent(driver), await newAgent(driver), await newAgent(driver)];
    const [a, b] = agents as [string, string, string];
    // Earlier changes: a's head at 2, b's at 1, the third's at 0.
    await driver.transaction((tx) =>
      appendChanges(tx, [
        { agentId: a, type: 'test.before', data: { n: 1 } },
        { agentId: a, type: 'test.before', data: { n: 2 } },
        { agentId: b, type: 'test.before', data: { n: 3 } },
      ]),
    );
    const shared = { listing: { name: `one each ${randomUUID()}` } };
    // One payload, type and workspace for all (a fan-out), then each its own.
    const fanOut = await driver.transaction((tx) =>
      appendChanges(
        tx,
        agents.map((agentId, i) => ({
          agentId,
          type: 'test.told',
          data: { i },
          sharedData: shared,
        })),
      ),
    );
    const general = await driver.transaction((tx) =>
      appendChanges(
        tx,
        agents.map((agentId, i) => ({ agentId, type: `test.own.${i}`, data: { i } })),
      ),
    );
    const expected = new Map([
      [agents[0], [3, 4]],
      [agents[1], [2, 3]],
      [agents[2], [1, 2]],
    ]);
    for (const [agentId, [first, second]] of expected) {
      const told = fanOut.find((s) => s.agentId === agentId);
      const own = general.find((s) => s.agentId === agentId);
      assert.is(told?.seq, first, 'the fan-out numbers from the head');
      assert.is(own?.seq, second, 'drafts of their own kinds number from the head');
      assert.is((await readFeedHead(driver, agentId as string))?.lastSeq, second);
      const read = await readChanges(driver, agentId as string, (first as number) - 1, 10);
      assert.equal(
        read.map((r) => r.event),
        [told?.event, own?.event],
        'read back as recorded',
      );
    }
  });

  test("a change told to many agents moves each head within its page, writing no index entry (migration 050's room)", async ({
    driver,
  }) => {
    const agents: string[] = [];
    for (let i = 0; i < 300; i++) agents.push(await newAgent(driver));
    const told = (n: number) =>
      agents.map((agentId) => ({ agentId, type: 'test.told', data: { n } }));
    // A head's next version on another page is a new index entry; on its own page it is not
    // (no indexed column changes: a HOT update).
    const pages = async () =>
      (
        await driver.query<{ agent_id: string; page: string }>(
          `select agent_id, (ctid::text::point)[0]::text as page from feed_heads
           where agent_id = any($1::uuid[]) order by agent_id`,
          [agents],
        )
      ).map((row) => `${row.agent_id} ${row.page}`);
    for (let n = 1; n <= 3; n++) {
      const before = await pages();
      await driver.transaction((tx) => appendChanges(tx, told(n)));
      assert.equal(await pages(), before, `fan-out ${n}: every head stayed on its page`);
    }
  });

  for (const alone of [false, true]) {
    test(`one write of several kinds (types, workspaces, shared and own payloads) reads back each change as recorded${alone ? ', by the statement for a transaction that runs alone' : ''}`, async ({
      driver,
    }) => {
      const [poster, a, b] = [
        await newAgent(driver),
        await newAgent(driver),
        await newAgent(driver),
      ];
      const shared = { listing: { name: `kinds ${randomUUID()}` } };
      const actor = { agent_id: poster, name: 'poster' };
      const [listings, files] = [randomUUID(), randomUUID()];
      const stored = await driver.transaction((tx) =>
        appendChanges(tx, [
          { agentId: a, type: 'test.told', data: { watch: 1 }, sharedData: shared, actor },
          { agentId: poster, type: 'test.saved', data: { path: 'x' }, workspaceId: files, actor },
          { agentId: b, type: 'test.told', data: { watch: 2 }, sharedData: shared, actor },
          { agentId: b, type: 'test.saved', data: { path: 'y' }, workspaceId: listings },
          {
            agentId: a,
            type: 'test.told',
            data: { watch: 3 },
            sharedData: shared,
            workspaceId: files,
          },
        ]),
      );
      assert.is(stored.length, 5);
      for (const agentId of [poster, a, b]) {
        const mine = stored.filter((s) => s.agentId === agentId);
        const read = await readChanges(driver, agentId, 0, 10);
        assert.equal(
          read.map((r) => r.event),
          mine.map((s) => s.event),
          'read back as recorded',
        );
        assert.equal(
          read.map((r) => JSON.parse(JSON.stringify(r.event))),
          mine.map((s) => JSON.parse(s.json as string)),
          'the JSON pushed is the event read back',
        );
      }
      const types = (agentId: string) =>
        stored
          .filter((s) => s.agentId === agentId)
          .map((s) => [s.event.type, s.event.workspace_id]);
      assert.equal(types(a), [
        ['test.told', undefined],
        ['test.told', files],
      ]);
      assert.equal(types(b), [
        ['test.told', undefined],
        ['test.saved', listings],
      ]);
    });
  }

  test('drafts telling several agents one thing, two of them to one agent, are numbered in order and read back whole', async ({
    driver,
  }) => {
    const [a, b, c] = [await newAgent(driver), await newAgent(driver), await newAgent(driver)];
    // An earlier change of b: its head is not at 0.
    await driver.transaction((tx) =>
      appendChanges(tx, [{ agentId: b, type: 'test.before', data: { n: 0 } }]),
    );
    const shared = { listing: { name: `told to many ${randomUUID()}` } };
    const actor = { agent_id: a, name: 'poster' };
    const workspaceId = randomUUID();
    const told = (agentId: string, watch: number) => ({
      agentId,
      type: 'test.told',
      data: { watch },
      sharedData: shared,
      actor,
      workspaceId,
    });
    const stored = await driver.transaction((tx) =>
      appendChanges(tx, [told(c, 1), told(b, 2), told(c, 3), told(a, 4)]),
    );
    assert.equal(
      stored.map((s) => [s.agentId, s.seq, s.event.data]),
      [
        [a, 1, { ...shared, watch: 4 }],
        [b, 2, { ...shared, watch: 2 }],
        [c, 1, { ...shared, watch: 1 }],
        [c, 2, { ...shared, watch: 3 }],
      ].sort((x, y) => ((x[0] as string) < (y[0] as string) ? -1 : 1)),
      'sorted by agent, each agent in the order of its drafts',
    );
    for (const s of stored) {
      const [read] = await readChanges(driver, s.agentId, s.seq - 1, 1);
      assert.equal(read?.event, s.event, 'read back as recorded');
      assert.equal(JSON.parse(s.json as string), s.event, 'its JSON text is the event');
      assert.is(read?.event.type, 'test.told');
      assert.is(read?.event.workspace_id, workspaceId);
      assert.equal(read?.event.actor, actor);
    }
    assert.is((await readFeedHead(driver, c))?.lastSeq, 2);
    const [payloads] = await driver.query<{ n: number }>(
      `select count(*)::int as n from change_payloads where data = $1::text::jsonb`,
      [JSON.stringify(shared)],
    );
    assert.is(payloads?.n, 1, 'the payload is stored once');
  });

  test('concurrent writers never give two changes of one agent the same number', async ({
    driver,
  }) => {
    const agentId = await newAgent(driver);
    await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        driver.transaction((tx) =>
          appendChanges(tx, [{ agentId, type: 'test.race', data: { n } }]),
        ),
      ),
    );
    const seqs = (await readChanges(driver, agentId, 0, 100)).map((r) => r.seq);
    assert.equal(
      seqs,
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });

  test("an agent's state is written only under the version it was read at", async ({ driver }) => {
    const agentId = await newAgent(driver);
    const first = await driver.transaction((tx) => saveAgentState(tx, agentId, 0, { n: 1 }));
    assert.is(first, 1);
    const stale = await driver.transaction((tx) => saveAgentState(tx, agentId, 0, { n: 2 }));
    assert.is(stale, null, 'a writer still at version 0 is told it is stale');
    const row = await findAgent(driver, agentId);
    assert.equal(row?.machine, { n: 1 });
    assert.is(row?.version, 1);
    assert.is(await driver.transaction((tx) => lockAgent(tx, agentId)), 1);
    assert.is(await driver.transaction((tx) => lockAgent(tx, randomUUID())), null);
  });

  test('a statement run again after its table changed shape sees the new shape', async ({
    driver,
  }) => {
    // Both drivers keep statements prepared: a stale one must never answer.
    await driver.script('create table reshaped (a int); insert into reshaped values (1);');
    const read = () => driver.query('select * from reshaped where a = $1', [1]);
    assert.equal(await read(), [{ a: 1 }]);
    await driver.script("alter table reshaped add column b text not null default 'new'");
    assert.equal(await read(), [{ a: 1, b: 'new' }]);
    await driver.query('alter table reshaped drop column b');
    assert.equal(await read(), [{ a: 1 }]);
  });

  test('a script runs several statements', async ({ driver }) => {
    await driver.script(
      'create table if not exists contract_scratch (n int); insert into contract_scratch values (1), (2);',
    );
    const [row] = await driver.query<{ n: number }>(
      'select count(*)::int8 as n from contract_scratch',
    );
    assert.ok((row?.n ?? 0) >= 2);
  });

  test.run();
}
