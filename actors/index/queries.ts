import { INDEX_ROW_CAP } from '../../protocol/index/sql.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { DatabaseError, QUERY_CANCELED } from '../../storage/database-error.ts';
import { bindScope, scopedQuery, type IndexScope } from '../../storage/index/index-scope.ts';
import type { Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import { checkUserSql } from './sql-policy.ts';

/**
 * The time limit of one index query (SQL_TIMEOUT_MS): PGlite has one connection that writes wait
 * behind, so agents' SQL gets a shorter leash there (0.5 s) than on PostgreSQL (2 s).
 */
export function sqlTimeoutMs(services: Services): number {
  return services.config.sqlTimeoutMs || (services.driver.kind === 'pglite' ? 500 : 2000);
}

/** The most bytes of rows (as JSON) one answer carries; past it `truncated` is true. */
const INDEX_BYTE_CAP = 8 * 1024 * 1024;

/**
 * The most bytes (UTF-8) of all `params` of one query together, below the 64 KiB a body may
 * hold. What a cross join of parameters' `jsonb_array_elements` aggregates (`string_agg`)
 * grows with their size: the bound makes such a value smaller, the memory cap (PGlite:
 * storage/pglite/driver.ts) stops it, and `work_mem` makes sorts and hashes spill to disk.
 */
export const INDEX_PARAMS_BYTE_CAP = 32 * 1024;

/**
 * What one agent's query may use for each sort or hash before it spills to disk (PostgreSQL's
 * default is 4MB, but a server's configuration may raise it for the service's own work).
 */
const AGENT_WORK_MEM = '4MB';

/** Refusals of queries that ran out of memory (they spend from the budget: handlers.ts). */
const outOfMemory = new WeakSet<ServiceError>();

/** Whether `error` refused a query that ran out of the memory one query may use. */
export function ranOutOfMemory(error: ServiceError): boolean {
  return outOfMemory.has(error);
}

/** Refuses `params` whose bytes together pass INDEX_PARAMS_BYTE_CAP, before anything runs. */
function checkParamBytes(params: (string | null)[]): void {
  const bytes = params.reduce((sum, value) => sum + (value ? Buffer.byteLength(value) : 0), 0);
  if (bytes <= INDEX_PARAMS_BYTE_CAP) return;
  throw new ServiceError(
    'invalid_input',
    `params hold ${bytes} bytes together; a query may pass at most ${INDEX_PARAMS_BYTE_CAP} ` +
      '(32 KiB). Filter in SQL over the index instead of sending the data.',
    { field: 'params', limit_bytes: INDEX_PARAMS_BYTE_CAP },
  );
}

/** The leading rows whose JSON fits in `cap` bytes (at least none). */
function withinBytes(rows: unknown[][], cap: number): unknown[][] {
  let bytes = 0;
  for (let i = 0; i < rows.length; i++) {
    bytes += Buffer.byteLength(JSON.stringify(rows[i])) + 1;
    if (bytes > cap) return rows.slice(0, i);
  }
  return rows;
}

/**
 * Whether a failed query ran out of what the database gives one statement rather than being
 * wrong: a resource class (53: out of memory), a program limit (54: stack depth, statement too
 * complex), a regular expression too large to compile (2201B with that reason), or an internal
 * error (XX000), which a read-only query over the scope views reaches only by exhausting the
 * engine (the embedded database answers an oversized regex with "bad buffer ID: 0" or "invalid
 * memory alloc request size"). Their messages mean nothing to an agent; one code says what to do.
 */
function beyondLimits(error: DatabaseError): boolean {
  const state = error.sqlState ?? '';
  return (
    state.startsWith('53') ||
    state.startsWith('54') ||
    state === 'XX000' ||
    (state === '2201B' && /too complex|out of memory/i.test(error.message))
  );
}

/** Type names agents see for the columns of an answer (PostgreSQL type OIDs). */
const TYPE_NAMES: Record<number, string> = {
  16: 'boolean',
  20: 'bigint',
  21: 'smallint',
  23: 'integer',
  25: 'text',
  114: 'json',
  700: 'real',
  701: 'double precision',
  1009: 'text[]',
  1043: 'text',
  1082: 'date',
  1114: 'timestamp',
  1184: 'timestamptz',
  1186: 'interval',
  1700: 'numeric',
  2950: 'uuid',
  3614: 'tsvector',
  3615: 'tsquery',
  3802: 'jsonb',
  1007: 'integer[]',
  1016: 'bigint[]',
  3807: 'jsonb[]',
};

/**
 * Runs an agent's SQL over the index: checked by the SQL policy (only what it allows ever
 * runs), wrapped in the scope CTEs, in a read-only transaction with `search_path` emptied to
 * pg_catalog (a relation outside the CTEs cannot resolve), as the reader role (which may read
 * the scope views and nothing else), on the agents' own pool, under the time limit (on PGlite
 * the driver stops its thread, so a runaway query never holds the one connection for long).
 */
export async function runIndexQuery(
  services: Services,
  principal: Principal,
  input: { sql: string; scope?: IndexScope; params?: (string | number | boolean | null)[] },
) {
  const checked = await checkUserSql(input.sql);
  const params = (input.params ?? []).map((value) => (value === null ? null : String(value)));
  checkParamBytes(params);
  if (params.length !== checked.parameterCount) {
    throw new ServiceError(
      'invalid_input',
      `The query uses ${checked.parameterCount} parameter(s) ($1...$${checked.parameterCount}); params has ${params.length}.`,
      { field: 'params' },
    );
  }
  const text = scopedQuery(checked.text, input.scope ?? 'own', INDEX_ROW_CAP);
  const started = performance.now();
  try {
    const table = await services.driver.transaction(
      async (tx) => {
        await tx.query(bindScope(services.indexReaderRole && !services.indexReaderLogin), [
          principal.agentId,
        ]);
        await tx.query(`select set_config('work_mem', $1, true)`, [AGENT_WORK_MEM]);
        return tx.queryTable(text, params);
      },
      { readOnly: true, timeoutMs: sqlTimeoutMs(services), pool: 'agents' },
    );
    const rows = withinBytes(table.rows.slice(0, INDEX_ROW_CAP), INDEX_BYTE_CAP);
    return {
      columns: table.columns.map((column) => ({
        name: column.name,
        type: TYPE_NAMES[column.typeOid] ?? `oid ${column.typeOid}`,
      })),
      rows,
      truncated: table.rows.length > rows.length,
      // Whole milliseconds: finer figures would serve as a stopwatch on the plan's inner work.
      elapsed_ms: Math.round(performance.now() - started),
    };
  } catch (error) {
    if (error instanceof DatabaseError && error.sqlState === QUERY_CANCELED) {
      throw new ServiceError(
        'sql_timeout',
        `The query ran past its time limit (${sqlTimeoutMs(services)} ms) and was stopped. Narrow it with WHERE or LIMIT.`,
        { timeout_ms: sqlTimeoutMs(services) },
      );
    }
    if (error instanceof DatabaseError && beyondLimits(error)) {
      // PostgreSQL's own reason where it says something to an agent; an internal one never.
      const reason = error.sqlState === 'XX000' ? '' : ` (${error.message})`;
      const refusal = new ServiceError(
        'sql_too_complex',
        `The query needs more than the database gives one query${reason}: memory, nesting ` +
          'depth, grouping sets, or a regular expression too complex to compile (nested ' +
          "repetitions such as '(a{1,255}){1,255}'). Simplify it: smaller or fewer nested " +
          'repetitions, fewer rows or values at once.',
        { field: 'sql' },
      );
      if (error.sqlState?.startsWith('53')) outOfMemory.add(refusal);
      throw refusal;
    }
    if (error instanceof DatabaseError) {
      throw new ServiceError('invalid_input', `The query failed: ${error.message}`, {
        field: 'sql',
      });
    }
    throw error;
  }
}
