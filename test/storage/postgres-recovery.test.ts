import postgres from 'postgres';
import * as assert from 'uvu/assert';
import { StorageUnavailableError } from '../../storage/database-error.ts';
import type { Driver } from '../../storage/driver.ts';
import { openPostgres } from '../../storage/postgres/driver.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';
import { eventually } from '../helpers/turns.ts';
import { TcpProxy } from './tcp-proxy.ts';

interface Context {
  url: string;
  /** Our own connection to the same database, to terminate the driver's and to NOTIFY. */
  admin: postgres.Sql;
  unhandled: unknown[];
  record: (reason: unknown) => void;
}

const test = postgresSuite<Context>('PostgreSQL going away and coming back');

test.before(async (context) => {
  context.url = await freshDatabaseUrl();
  context.admin = postgres(context.url, {
    max: 1,
    onnotice: () => undefined,
    connection: { application_name: 'recovery-test' },
  });
  // Anything postgres.js lets escape while the server is away would crash the service.
  context.unhandled = [];
  context.record = (reason) => context.unhandled.push(reason);
  process.on('unhandledRejection', context.record);
});
test.after(async ({ admin, record }) => {
  process.off('unhandledRejection', record);
  await admin.end({ timeout: 5 });
});

async function listensAgain(admin: postgres.Sql, heard: string[], payload: string) {
  await eventually(
    'NOTIFY reaches the listener again',
    async () => {
      await admin`select pg_notify('recovery', ${payload})`;
      return heard.includes(payload);
    },
    15_000,
  );
}

const fails = async (call: Promise<unknown>) => {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  assert.instance(error, StorageUnavailableError);
  assert.not.match((error as Error).message, 'postgres://');
};

test('when its connections are terminated, calls in flight fail as unavailable, the next succeed, and listening resumes', async ({
  url,
  admin,
  unhandled,
}) => {
  const driver: Driver = await openPostgres(url);
  try {
    const heard: string[] = [];
    await driver.listen?.('recovery', (payload) => heard.push(payload));
    await listensAgain(admin, heard, 'before');

    // In a transaction: a read on its own whose connection dies is asked once more on a fresh
    // one (storage/postgres/driver.ts), and would sleep again.
    const inFlight = driver.transaction((tx) => tx.query('select pg_sleep(10)'));
    await eventually(
      'the sleep is running',
      async () => {
        const [row] = await admin`select count(*)::int as n from pg_stat_activity
          where datname = current_database() and query like 'select pg_sleep%' and state = 'active'`;
        return row?.n === 1;
      },
      15_000,
    );
    await admin`select pg_terminate_backend(pid) from pg_stat_activity
      where datname = current_database() and application_name = 'agent-service'`;
    await fails(inFlight);

    assert.equal(await driver.query('select 1 as one'), [{ one: 1 }]);
    await driver.ping();
    await listensAgain(admin, heard, 'after');
    assert.equal(unhandled, []);
  } finally {
    await driver.close();
  }
});

test('while the server cannot be reached, calls and ping reject as unavailable; once it is back, both work and listening resumes', async ({
  url,
  admin,
  unhandled,
}) => {
  const target = new URL(url);
  const proxy = await TcpProxy.start(target.hostname, Number(target.port || 5432));
  const driver: Driver = await openPostgres(proxy.rewrite(url));
  try {
    const heard: string[] = [];
    await driver.listen?.('recovery', (payload) => heard.push(payload));
    await listensAgain(admin, heard, 'first');

    await proxy.down();
    await fails(driver.query('select 1'));
    await fails(driver.transaction((tx) => tx.query('select 1')));
    await fails(driver.ping());

    await proxy.up();
    // The driver reconnects on its own time: until then each ping rejects.
    await eventually(
      'ping answers again',
      () =>
        driver.ping().then(
          () => true,
          () => false,
        ),
      15_000,
    );
    assert.equal(await driver.query('select 2 as two'), [{ two: 2 }]);
    await listensAgain(admin, heard, 'back');
    assert.equal(unhandled, []);
  } finally {
    await driver.close();
    await proxy.down();
  }
});

test('two fresh databases share nothing', async ({ url }) => {
  const other = await freshDatabaseUrl();
  assert.is.not(other, url);
  const [a, b] = await Promise.all([openPostgres(url), openPostgres(other)]);
  try {
    await a.script('create table only_here (n int)');
    const [row] = await b.query<{ found: string | null }>(
      "select to_regclass('only_here')::text as found",
    );
    assert.is(row?.found, null);
    const [applied] = await b.query<{ n: number }>(
      'select count(*)::int as n from schema_migrations',
    );
    assert.ok((applied?.n ?? 0) > 0, 'and each is migrated');
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test.run();
