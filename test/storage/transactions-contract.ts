import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { ServiceError } from '../../protocol/errors.ts';
import {
  DatabaseError,
  QUERY_CANCELED,
  READ_ONLY_SQL_TRANSACTION,
  UNIQUE_VIOLATION,
} from '../../storage/database-error.ts';
import type { Driver, Queryable } from '../../storage/driver.ts';
import { openTestDriver, type DriverKind } from '../helpers/storage.ts';
import { driverSuite } from './contract.ts';

/** Transactions, held to what PostgreSQL itself does: every driver runs this same suite. */
export function transactionContract(kind: DriverKind): void {
  const test = driverSuite<{ driver: Driver }>(kind, `transaction contract on ${kind}`);

  test.before(async (context) => {
    context.driver = await openTestDriver(kind);
    await context.driver.script('create table notes (id text primary key, body text not null)');
  });
  test.after(async ({ driver }) => {
    await driver.close();
  });

  const write = (tx: Queryable, id: string, body = 'x') =>
    tx.query('insert into notes (id, body) values ($1, $2)', [id, body]);
  const stored = async (driver: Driver, ...ids: string[]) =>
    (
      await driver.query<{ id: string }>('select id from notes where id = any($1::text[])', [ids])
    ).map((row) => row.id);

  test('a transaction whose failed statement was caught still rejects with that statement’s error, and writes nothing', async ({
    driver,
  }) => {
    const [before, duplicate] = [randomUUID(), randomUUID()];
    await driver.transaction((tx) => write(tx, duplicate));
    const error = await driver
      .transaction(async (tx) => {
        await write(tx, before);
        await write(tx, duplicate).catch(() => 'swallowed');
        return 'resolved';
      })
      .catch((e: unknown) => e);
    assert.instance(error, DatabaseError);
    assert.is((error as DatabaseError).sqlState, UNIQUE_VIOLATION);
    assert.equal(await stored(driver, before), []);
  });

  test('statements after a failed one fail too, and the transaction rejects with the first error', async ({
    driver,
  }) => {
    const duplicate = randomUUID();
    await driver.transaction((tx) => write(tx, duplicate));
    const later: unknown[] = [];
    const error = await driver
      .transaction(async (tx) => {
        await write(tx, duplicate).catch(() => undefined);
        later.push(await tx.query('select 1').catch((e: unknown) => e));
      })
      .catch((e: unknown) => e);
    assert.is((error as DatabaseError).sqlState, UNIQUE_VIOLATION);
    assert.is((later[0] as DatabaseError).sqlState, '25P02');
  });

  test('a failure inside a savepoint rolls back only the savepoint, and the outer writes commit', async ({
    driver,
  }) => {
    const [outerBefore, inner, outerAfter, duplicate] = [
      randomUUID(),
      randomUUID(),
      randomUUID(),
      randomUUID(),
    ];
    await driver.transaction((tx) => write(tx, duplicate));
    const result = await driver.transaction(async (tx) => {
      await write(tx, outerBefore);
      const inside = await tx
        .savepoint(async (sp) => {
          await write(sp, inner);
          await write(sp, duplicate);
        })
        .catch((e: unknown) => e);
      await write(tx, outerAfter);
      return inside;
    });
    assert.is((result as DatabaseError).sqlState, UNIQUE_VIOLATION);
    assert.equal(
      (await stored(driver, outerBefore, inner, outerAfter)).sort(),
      [outerBefore, outerAfter].sort(),
    );
  });

  test('a savepoint whose failed statement was caught inside it still rejects', async ({
    driver,
  }) => {
    const [inner, duplicate] = [randomUUID(), randomUUID()];
    await driver.transaction((tx) => write(tx, duplicate));
    const outcome = await driver.transaction((tx) =>
      tx
        .savepoint(async (sp) => {
          await write(sp, inner);
          await write(sp, duplicate).catch(() => undefined);
          return 'resolved';
        })
        .catch((e: unknown) => e),
    );
    assert.is((outcome as DatabaseError).sqlState, UNIQUE_VIOLATION);
    assert.equal(await stored(driver, inner), []);
  });

  test('a savepoint that rejects with its own error undoes its writes and passes the error on', async ({
    driver,
  }) => {
    const [kept, undone, nestedKept] = [randomUUID(), randomUUID(), randomUUID()];
    const refusal = new ServiceError('invalid_input', 'refused on purpose');
    const seen = await driver.transaction(async (tx) => {
      await write(tx, kept);
      await tx.savepoint(async (sp) => {
        await sp.savepoint((nested) => write(nested, nestedKept));
      });
      return tx
        .savepoint(async (sp) => {
          await write(sp, undone);
          throw refusal;
        })
        .catch((e: unknown) => e);
    });
    assert.is(seen, refusal);
    assert.equal(
      (await stored(driver, kept, undone, nestedKept)).sort(),
      [kept, nestedKept].sort(),
    );
  });

  test('a savepoint resolves with what its callback returns', async ({ driver }) => {
    const value = await driver.transaction((tx) =>
      tx.savepoint(async (sp) => (await sp.query<{ n: number }>('select 41 + 1 as n'))[0]?.n),
    );
    assert.is(value, 42);
  });

  test('a write in a read-only transaction fails with 25006, and reads work', async ({
    driver,
  }) => {
    const id = randomUUID();
    const [row] = await driver.transaction((tx) => tx.query<{ n: number }>('select 1 as n'), {
      readOnly: true,
    });
    assert.is(row?.n, 1);
    const error = await driver
      .transaction((tx) => write(tx, id), { readOnly: true })
      .catch((e: unknown) => e);
    assert.instance(error, DatabaseError);
    assert.is((error as DatabaseError).sqlState, READ_ONLY_SQL_TRANSACTION);
    assert.equal(await stored(driver, id), []);
  });

  test('a statement past the timeout is stopped with 57014, and committed writes survive it', async ({
    driver,
  }) => {
    const [committed, uncommitted] = [randomUUID(), randomUUID()];
    await driver.transaction((tx) => write(tx, committed));
    const started = performance.now();
    const error = await driver
      .transaction(
        async (tx) => {
          await write(tx, uncommitted);
          await tx.query('select pg_sleep(10)');
        },
        { timeoutMs: 200 },
      )
      .catch((e: unknown) => e);
    // Stopped, not finished: far less than the ten seconds it asked for.
    assert.ok(performance.now() - started < 5000, 'the sleep was stopped');
    assert.instance(error, DatabaseError);
    assert.is((error as DatabaseError).sqlState, QUERY_CANCELED);
    assert.equal(await stored(driver, committed, uncommitted), [committed]);
    const [row] = await driver.transaction((tx) => tx.query<{ n: number }>('select 2 as n'), {
      timeoutMs: 5000,
    });
    assert.is(row?.n, 2, 'the next transaction runs, within its own timeout');
  });

  test('the driver itself, called inside a transaction callback, rejects at once and says why', async ({
    driver,
  }) => {
    const errors = await driver
      .transaction(async () => [
        await driver.query('select 1').catch((e: unknown) => e),
        await driver.script('select 1').catch((e: unknown) => e),
        await driver.transaction(async () => 1).catch((e: unknown) => e),
      ])
      .catch((e: unknown) => [e]);
    assert.is(errors.length, 3);
    for (const error of errors) {
      assert.instance(error, Error);
      assert.match((error as Error).message, 'use the transaction handed to the callback');
    }
    assert.ok(await driver.query('select 1'), 'and outside the callback it works again');
  });

  test('work the callback left running may use the driver once the transaction is over', async ({
    driver,
  }) => {
    let later!: Promise<unknown>;
    await driver.transaction(async () => {
      later = new Promise((resolve) => setImmediate(resolve)).then(() =>
        driver.query<{ n: number }>('select 3 as n'),
      );
    });
    assert.equal(await later, [{ n: 3 }]);
  });

  test('a transaction handle used after its callback ended is refused, never run outside it', async ({
    driver,
  }) => {
    let kept!: Queryable;
    await driver.transaction(async (tx) => {
      kept = tx;
    });
    const late = randomUUID();
    const error = await write(kept, late).catch((e: unknown) => e);
    assert.instance(error, Error);
    assert.match((error as Error).message, 'this transaction has ended');
    assert.equal(await stored(driver, late), []);
  });

  test('ping resolves while the database answers', async ({ driver }) => {
    await driver.ping();
  });

  test('queryTable answers columns in order, repeated names kept, rows as arrays of parsed values', async ({
    driver,
  }) => {
    const table = await driver.transaction(
      (tx) =>
        tx.queryTable(
          `select 1::int8 as n, 'a'::text as n, $1::text::jsonb as doc,
             '2026-01-02T03:04:05Z'::timestamptz as at, null::text as nothing`,
          ['{"city":"Berlin"}'],
        ),
      { readOnly: true },
    );
    assert.equal(
      table.columns.map((column) => column.name),
      ['n', 'n', 'doc', 'at', 'nothing'],
    );
    assert.equal(
      table.columns.map((column) => column.typeOid),
      [20, 25, 3802, 1184, 25],
    );
    const [row] = table.rows;
    assert.equal(row?.slice(0, 3), [1, 'a', { city: 'Berlin' }]);
    assert.equal((row?.[3] as Date).toISOString(), '2026-01-02T03:04:05.000Z');
    assert.is(row?.[4], null);
    const empty = await driver.transaction((tx) =>
      tx.queryTable('select id, body from notes where false'),
    );
    assert.equal(empty, {
      columns: [
        { name: 'id', typeOid: 25 },
        { name: 'body', typeOid: 25 },
      ],
      rows: [],
    });
  });

  test('agents’ SQL never queues the service’s own work behind more than the one query that runs', async ({
    driver,
  }) => {
    const order: string[] = [];
    let releaseFirst = () => undefined as void;
    const firstHolds = new Promise<void>((resolve) => (releaseFirst = resolve));
    let firstStarted = () => undefined as void;
    const started = new Promise<void>((resolve) => (firstStarted = resolve));
    const agents = { readOnly: true, pool: 'agents' } as const;
    const first = driver.transaction(async (tx) => {
      await tx.query('select 1');
      firstStarted();
      await firstHolds;
      order.push('first agents query ends');
    }, agents);
    await started;
    const second = driver.transaction(async (tx) => {
      order.push('second agents query starts');
      await tx.query('select 1');
    }, agents);
    const id = randomUUID();
    const serviceWrite = driver
      .transaction((tx) => write(tx, id))
      .then(() => {
        order.push('service write done');
      });
    if (driver.kind === 'postgres') {
      // A pool of its own: the write does not wait for the agents' query that holds on.
      await serviceWrite;
      releaseFirst();
    } else {
      // One connection: the write waits for the query that runs, not for the one queued.
      releaseFirst();
      await Promise.all([serviceWrite, second]);
      assert.equal(order, [
        'first agents query ends',
        'service write done',
        'second agents query starts',
      ]);
    }
    await Promise.all([first, second]);
    assert.equal(await stored(driver, id), [id]);
  });

  test('a transaction whose last statement goes by lastQuery commits it, one round trip fewer than by query', async ({
    driver,
  }) => {
    const trips = async (last: 'query' | 'lastQuery') => {
      const ids = [randomUUID(), randomUUID()];
      const before = driver.roundTrips();
      const rows = await driver.transaction(async (tx) => {
        await write(tx, ids[0] as string);
        return tx[last]<{ id: string }>(
          'insert into notes (id, body) values ($1, $2) returning id',
          [ids[1], 'last'],
        );
      });
      const spent = driver.roundTrips() - before;
      assert.equal(rows, [{ id: ids[1] }]);
      assert.equal((await stored(driver, ...ids)).sort(), [...ids].sort());
      return spent;
    };
    const plain = await trips('query');
    const folded = await trips('lastQuery');
    assert.is(folded, plain - 1);
    // PGlite: BEGIN with the first statement, COMMIT with the last.
    if (driver.kind === 'pglite') assert.is(folded, 2);
  });

  test('after lastQuery the handle refuses every statement, and what ran stays committed', async ({
    driver,
  }) => {
    const [id, late] = [randomUUID(), randomUUID()];
    let refused: unknown = null;
    await driver.transaction(async (tx) => {
      await tx.lastQuery('insert into notes (id, body) values ($1, $2)', [id, 'x']);
      refused = await write(tx, late).catch((e: unknown) => e);
    });
    assert.instance(refused, Error);
    assert.match((refused as Error).message, /ended/);
    assert.equal(await stored(driver, id, late), [id]);
  });

  test('a lastQuery that fails rolls the whole transaction back and rejects with its error', async ({
    driver,
  }) => {
    const [first, duplicate] = [randomUUID(), randomUUID()];
    await driver.transaction((tx) => write(tx, duplicate));
    const error = await driver
      .transaction(async (tx) => {
        await write(tx, first);
        await tx.lastQuery('insert into notes (id, body) values ($1, $2)', [duplicate, 'x']);
      })
      .catch((e: unknown) => e);
    assert.is((error as DatabaseError).sqlState, UNIQUE_VIOLATION);
    assert.equal(await stored(driver, first), []);
  });

  test('a lastQuery after a failed statement the callback caught commits nothing', async ({
    driver,
  }) => {
    const [first, duplicate, last] = [randomUUID(), randomUUID(), randomUUID()];
    await driver.transaction((tx) => write(tx, duplicate));
    const error = await driver
      .transaction(async (tx) => {
        await write(tx, first);
        await write(tx, duplicate).catch(() => 'swallowed');
        await tx
          .lastQuery('insert into notes (id, body) values ($1, $2)', [last, 'x'])
          .catch(() => 'swallowed too');
      })
      .catch((e: unknown) => e);
    assert.is((error as DatabaseError).sqlState, UNIQUE_VIOLATION);
    assert.equal(await stored(driver, first, last), []);
  });

  test('in a savepoint lastQuery is a plain statement: the enclosing transaction goes on and can still roll it back', async ({
    driver,
  }) => {
    const [inner, after] = [randomUUID(), randomUUID()];
    const error = await driver
      .transaction(async (tx) => {
        await tx.savepoint((sp) =>
          sp.lastQuery('insert into notes (id, body) values ($1, $2)', [inner, 'x']),
        );
        await write(tx, after);
        throw new Error('the enclosing transaction fails after the savepoint');
      })
      .catch((e: unknown) => e);
    assert.match((error as Error).message, /enclosing/);
    assert.equal(await stored(driver, inner, after), []);
    await driver.transaction(async (tx) => {
      await tx.savepoint((sp) =>
        sp.lastQuery('insert into notes (id, body) values ($1, $2)', [inner, 'x']),
      );
      await write(tx, after);
    });
    assert.equal((await stored(driver, inner, after)).sort(), [inner, after].sort());
  });

  test('with a time limit lastQuery commits too', async ({ driver }) => {
    const id = randomUUID();
    await driver.transaction(
      (tx) => tx.lastQuery('insert into notes (id, body) values ($1, $2)', [id, 'x']),
      { timeoutMs: 5000 },
    );
    assert.equal(await stored(driver, id), [id]);
  });

  test.run();
}
