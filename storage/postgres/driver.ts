import postgres from 'postgres';
import type { Driver, Queryable, Row, Transaction, TransactionOptions } from '../driver.ts';
import { StorageUnavailableError } from '../database-error.ts';
import {
  connectionDied,
  onlyReads,
  translateAutocommitError,
  translatePostgresError,
} from './errors.ts';
import { PostgresListener } from './listener.ts';
import { StallWatch } from './stall.ts';
import { learnCommitOutcome, TRANSACTION_ID_SQL, type TransactionIdRow } from './commit-outcome.ts';
import { TransactionGuard } from '../transaction-guard.ts';

const PING_DEADLINE_MS = 2000;
const ENDED = 'this transaction has ended: its handle cannot be used after its callback';
/** How long `close` lets calls in flight finish. */
const CLOSE_GRACE_MS = 5000;

/**
 * Whether a transaction's handle may no longer be used, and, when its call was given up (its
 * connection lost, or a step stalled), why: the transaction will not commit, and a statement
 * the callback still tries is told so (503), not a programming error.
 */
interface Ended {
  now: boolean;
  lost: StorageUnavailableError | null;
}

function refuseEnded(ended: Ended): void {
  if (!ended.now) return;
  throw ended.lost ? new StorageUnavailableError(ended.lost.reason) : new Error(ENDED);
}

/**
 * Runs `once`, and once more when it failed on a pooled connection found dead (postgres.js has
 * dropped that connection by then, so the second try gets a fresh one) and `neverRan` says the
 * first try cannot have run: for calls that are harmless to repeat. Stale connections are thus
 * dropped without costing a caller an error.
 */
async function onFreshIfDied<T>(once: () => Promise<T>, neverRan = () => true): Promise<T> {
  try {
    return await once();
  } catch (error) {
    if (!connectionDied(translatePostgresError(error)) || !neverRan()) throw error;
    return once();
  }
}

/**
 * Whether the server answered any part of `statement`: it answers Parse and Bind before it runs
 * anything, and a simple query's rows start with RowDescription, all flushed with the FATAL of a
 * backend killed mid-query (postgres.js, patched, marks the query `answered`:
 * patches/postgres+3.4.9.patch). postgres.js fails a read killed while it ran
 * (pg_terminate_backend) and one sent to a backend already dead alike (CONNECTION_CLOSED); only
 * this tells them apart. A read with no answer never ran, or still waited for a lock: asked again.
 */
function answered(statement: object | null): boolean {
  return (statement as { answered?: boolean } | null)?.answered === true;
}

/**
 * Planner settings every connection of the pools starts with (startup parameters), for
 * statements of milliseconds over data that is mostly in memory:
 * - `jit: off`: compiling a plan whose cost merely passes `jit_above_cost` took 15-20 ms on every
 *   store page (a branch the planner costs high and seldom runs), more than the page otherwise;
 * - `random_page_cost: 1.1` (the default 4 models spinning disks): the store walks listings in an
 *   index's order and stops at a page; costed for disks, the planner read and sorted the whole
 *   table instead (24 ms, spilling to disk, against 5 ms at 10,000 listings).
 */
const PLANNER = { jit: 'off', random_page_cost: '1.1' } as const;

/**
 * PostgreSQL through postgres.js, with prepared statements for the service's own SQL.
 * postgres.js reconnects by itself: while the server is down, calls reject with
 * StorageUnavailableError, and the first call after it is back succeeds.
 */
export async function openPostgres(
  url: string,
  options: { max?: number; agentsMax?: number } = {},
): Promise<Driver> {
  const shared = {
    prepare: true,
    onnotice: () => undefined,
    // int8 as a JS number, as the PGlite driver does.
    types: { bigint: { to: 20, from: [20], serialize: String, parse: Number } },
    connection: { application_name: 'agent-service', ...PLANNER },
    // Seconds before connecting again after a failed attempt. postgres.js's own backoff grows
    // to 20 s, and every call waits it out: calls would hang, not fail, while the server is
    // down, and stay slow for as long after it is back.
    backoff: (attempt: number) => Math.min(0.05 * 2 ** attempt, 1),
    connect_timeout: 10,
  };
  const sql = postgres(url, { ...shared, max: options.max ?? 10 });
  // Agents' own SQL (TransactionOptions.pool 'agents'): a pool of its own, opened on first use.
  let agentsUrl = url;
  let agentsSql: postgres.Sql | null = null;
  const openAgentsPool = (at: string) =>
    postgres(at, {
      ...shared,
      max: options.agentsMax ?? 4,
      connection: { application_name: 'agent-service-index', ...PLANNER },
    });
  const poolFor = (pool: TransactionOptions['pool']) =>
    pool === 'agents' ? (agentsSql ??= openAgentsPool(agentsUrl)) : sql;
  const guard = new TransactionGuard();
  let listener: PostgresListener | null = null;
  // Calls in flight, for `close`: postgres.js's own end() waits out its whole timeout once any
  // connection was lost with a query on it (it never forgets that query), so `close` waits
  // for our calls itself and then ends at once.
  const inFlight = new Set<Promise<unknown>>();
  /** Flights of statements awaited (Driver.roundTrips). */
  let roundTrips = 0;
  const track = <T>(call: Promise<T>): Promise<T> => {
    inFlight.add(call);
    const forget = () => inFlight.delete(call);
    call.then(forget, forget);
    return call;
  };

  // A transaction's handle, kept past its callback, would run statements on a connection
  // back in the pool (postgres.js does not refuse them): outside the transaction, or inside
  // someone else's. `ended` refuses them, as the PGlite driver does.
  const wrap = (
    run: typeof sql | postgres.TransactionSql,
    ended: Ended = { now: false, lost: null },
    stall: StallWatch | null = null,
  ): Queryable => {
    // Outside a transaction each statement commits on its own.
    const autocommit = run === sql;
    // Each statement's error: one run on its own whose connection was lost after it was sent
    // may have committed (outcome unknown); inside a transaction, nothing commits before COMMIT.
    const translate = (text: string, error: unknown) =>
      autocommit ? translateAutocommitError(text, error) : translatePostgresError(error);
    return {
      async query<T extends Row>(text: string, params: readonly unknown[] = []) {
        refuseEnded(ended);
        let statement: object | null = null;
        const once = async () => {
          roundTrips++;
          const pending = run.unsafe(text, params as postgres.ParameterOrJSON<never>[], {
            prepare: true,
          });
          statement = pending;
          return [...(await (stall ?? new StallWatch()).watch(pending))] as unknown as T[];
        };
        try {
          // A read on its own may meet a pooled connection whose backend just died: asking
          // again on a fresh one is harmless when the server never had it. Inside a
          // transaction the transaction is lost.
          return autocommit && onlyReads(text)
            ? await onFreshIfDied(once, () => !answered(statement))
            : await once();
        } catch (error) {
          throw translate(text, error);
        }
      },
      async script(text: string) {
        refuseEnded(ended);
        roundTrips++;
        try {
          await run.unsafe(text).simple();
        } catch (error) {
          throw translate(text, error);
        }
      },
    };
  };
  /**
   * A transaction's handle. `learnedId` is the root transaction's: its `lastQuery` asks the
   * transaction's id (TRANSACTION_ID_SQL) in the same flight as the statement, and hands it
   * over, so that `attempt` need not ask it in a round trip of its own before COMMIT.
   */
  const inside = (
    tx: postgres.TransactionSql,
    ended: Ended,
    stall: StallWatch,
    learnedId: ((row: TransactionIdRow) => void) | null,
  ): Transaction => {
    const own = wrap(tx, ended, stall);
    return {
      ...own,
      lastQuery: learnedId
        ? async <T extends Row>(text: string, params: readonly unknown[] = []) => {
            refuseEnded(ended);
            // From here on the handle is done with, as after its callback.
            ended.now = true;
            roundTrips++;
            const rows = tx.unsafe(text, params as postgres.ParameterOrJSON<never>[], {
              prepare: true,
            });
            const id = tx.unsafe<TransactionIdRow[]>(TRANSACTION_ID_SQL);
            // The id is asked only when the statement succeeded; its failure then is the
            // statement's (25P02), and is not waited for.
            id.catch(() => undefined);
            try {
              const answered = [...(await stall.watch(rows))] as unknown as T[];
              const [row] = await stall.watch(id);
              if (row) learnedId(row);
              return answered;
            } catch (error) {
              throw translatePostgresError(error);
            }
          }
        : own.query,
      queryTable: async (text, params = []) => {
        refuseEnded(ended);
        roundTrips++;
        try {
          const result = await stall.watch(
            tx
              .unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: false })
              .values(),
          );
          return {
            columns: result.columns.map((column) => ({ name: column.name, typeOid: column.type })),
            rows: [...result] as unknown[][],
          };
        } catch (error) {
          throw translatePostgresError(error);
        }
      },
      savepoint: async (work) => {
        refuseEnded(ended);
        roundTrips++;
        try {
          return (await tx.savepoint((inner) =>
            work(inside(inner, ended, stall, null)),
          )) as Awaited<ReturnType<typeof work>>;
        } catch (error) {
          throw translatePostgresError(error);
        }
      },
    };
  };
  const misused = (method: string): Promise<never> | null => {
    const error = guard.misuse(method);
    return error ? Promise.reject(error) : null;
  };

  /**
   * A transaction whose BEGIN met a stale pooled connection (its backend killed, its socket
   * dead) is begun once more on a fresh one: its callback never ran, so nothing of it was sent
   * but BEGIN, and nothing can have been written. Once the callback runs, a lost connection is
   * the caller's answer (storage_unavailable, or the COMMIT's outcome).
   */
  async function transaction<T>(
    work: (tx: Transaction) => Promise<T>,
    options: TransactionOptions = {},
  ): Promise<T> {
    const started = { now: false };
    try {
      return await attempt(work, options, started);
    } catch (error) {
      if (started.now || !connectionDied(error)) throw error;
      return attempt(work, options, started);
    }
  }

  async function attempt<T>(
    work: (tx: Transaction) => Promise<T>,
    options: TransactionOptions,
    started: { now: boolean },
  ): Promise<T> {
    // The callback's own rejection passes through as it is; only postgres.js's are translated.
    const callbackFailed: unknown[] = [];
    // The begin, each statement and the commit are given up on when they stall (a connection
    // lost at the wrong moment can leave them pending for ever): stall.ts.
    const stall = new StallWatch();
    let steps = stall.begin();
    // Set once the handle may no longer be used: its callback settled, or its connection was
    // lost (postgres.js would send a late statement on the reconnected connection, outside
    // any transaction, and autocommit it).
    const ended: Ended = { now: false, lost: null };
    // Set once the callback resolved and COMMIT is about to be sent: what it wrote, if anything.
    let committing: { xid: string | null; pid: number; result: T } | null = null;
    const pool = poolFor(options.pool);
    try {
      // BEGIN, and then COMMIT (or ROLLBACK): postgres.js awaits each on its own.
      roundTrips += 2;
      const begun = pool.begin(options.readOnly ? 'read only' : '', async (tx) => {
        steps();
        started.now = true;
        let result: T;
        let learned: TransactionIdRow | null = null;
        try {
          if (options.timeoutMs && options.timeoutMs > 0) {
            roundTrips++;
            await stall.watch(
              tx.unsafe(`set local statement_timeout = ${Math.ceil(options.timeoutMs)}`),
            );
          }
          const handle = inside(tx, ended, stall, (row) => (learned = row));
          result = await guard.run(() => work(handle));
        } catch (error) {
          callbackFailed.push(error);
          throw error;
        } finally {
          ended.now = true;
          steps = stall.begin();
        }
        // The call was given up while the callback ran (a step stalled: its backend may still
        // be alive): the caller was told nothing was written, so COMMIT must never be sent.
        if (ended.lost) throw ended.lost;
        if (!options.readOnly) {
          let row: TransactionIdRow | null | undefined = learned;
          if (!row) {
            roundTrips++;
            [row] = await tx.unsafe<TransactionIdRow[]>(TRANSACTION_ID_SQL);
          }
          committing = { xid: row?.xid ?? null, pid: row?.pid ?? 0, result };
        }
        return result;
      });
      return (await Promise.race([begun, stall.given])) as T;
    } catch (error) {
      ended.now = true;
      if (callbackFailed.includes(error)) throw error;
      const failure = translatePostgresError(error);
      if (failure instanceof StorageUnavailableError) ended.lost = failure;
      // Only a lost connection leaves the COMMIT's outcome open; a transaction that wrote
      // nothing has nothing to lose, and any other failure at COMMIT rolled it back.
      const sent = committing as { xid: string | null; pid: number; result: T } | null;
      if (!(failure instanceof StorageUnavailableError) || !sent?.xid) throw failure;
      // A COMMIT that stalled may still be running: end its backend first, which settles the
      // outcome and drops the connection from the pool at once.
      if (failure.reason.startsWith('no answer')) {
        await pool.unsafe('select pg_terminate_backend($1)', [sent.pid]).catch(() => undefined);
      }
      await learnCommitOutcome(pool, sent.xid, failure);
      return sent.result;
    } finally {
      stall.clear();
    }
  }

  const outside = wrap(sql);
  try {
    await outside.query('select 1');
  } catch (error) {
    await sql.end({ timeout: 0 });
    throw error;
  }
  return {
    kind: 'postgres',
    roundTrips: () => roundTrips,
    query: (text, params) => misused('query') ?? track(outside.query(text, params)),
    script: (text) => misused('script') ?? track(outside.script(text)),
    transaction: (work, options) => misused('transaction') ?? track(transaction(work, options)),
    async ping() {
      const misuse = misused('ping');
      if (misuse) return misuse;
      let timer: NodeJS.Timeout | undefined;
      roundTrips++;
      try {
        await Promise.race([
          onFreshIfDied(() => sql.unsafe('select 1')),
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () => reject(new StorageUnavailableError('no answer within 2 s')),
              PING_DEADLINE_MS,
            );
          }),
        ]);
      } catch (error) {
        const translated = translatePostgresError(error);
        throw translated instanceof StorageUnavailableError
          ? translated
          : new StorageUnavailableError('the database did not answer');
      } finally {
        clearTimeout(timer);
      }
    },
    async loginAgentsAs(user, password) {
      const at = new URL(url);
      at.username = user;
      at.password = password;
      const candidate = openAgentsPool(at.toString());
      try {
        await candidate.unsafe('select 1');
      } catch {
        await candidate.end({ timeout: 0 });
        return false;
      }
      const previous = agentsSql;
      agentsUrl = at.toString();
      agentsSql = candidate;
      await previous?.end({ timeout: 5 });
      return true;
    },
    async listen(channel, onPayload) {
      listener ??= new PostgresListener(url, shared);
      await listener.listen(channel, onPayload);
    },
    onListenResumed(onResumed) {
      listener ??= new PostgresListener(url, shared);
      listener.onResumed(onResumed);
    },
    async close() {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...inFlight]),
        new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS))),
      ]);
      clearTimeout(timer);
      await Promise.all([
        sql.end({ timeout: 0 }),
        agentsSql?.end({ timeout: 0 }),
        listener?.close(),
      ]);
    },
  };
}
