import postgres from 'postgres';

/**
 * The service's PostgreSQL backends as a test sees them from a connection of its own: found
 * waiting on a lock the test holds, and killed (pg_terminate_backend), as an operator or a
 * crash would. The service names its pooled connections `agent-service` and its others
 * (agents' SQL, LISTEN) `agent-service-…` (storage/postgres/driver.ts).
 */

/** A connection of the test's own to `url`, under a name of its own (never the service's). */
export function adminConnection(url: string, name: string): postgres.Sql {
  return postgres(url, {
    max: 1,
    onnotice: () => undefined,
    connection: { application_name: name },
  });
}

/** Kills every backend of the service's on this database (pooled, agents', LISTEN): how many. */
export async function terminateServiceBackends(sql: postgres.ISql): Promise<number> {
  const rows = await sql.unsafe(`
    select pg_terminate_backend(pid) from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid()
      and application_name like 'agent-service%'`);
  return rows.length;
}

/** A pooled backend of the service's that waits on a lock, and the statement that waits. */
export interface WaitingBackend {
  pid: number;
  query: string;
}

/** The service's pooled backends that wait on a lock now (an `advisory` one, when asked). */
export async function waitingServiceBackends(
  sql: postgres.ISql,
  lock: 'any' | 'advisory' = 'any',
): Promise<WaitingBackend[]> {
  return sql.unsafe<WaitingBackend[]>(
    `select pid, query from pg_stat_activity
     where datname = current_database() and application_name = 'agent-service'
       and wait_event_type = 'Lock' and ($1 = 'any' or wait_event = $1)
     order by pid`,
    [lock],
  );
}

/** The state of backend `pid` (`idle`, `active`, …); null once it is gone. */
export async function backendState(sql: postgres.ISql, pid: number): Promise<string | null> {
  const [row] = await sql.unsafe<{ state: string | null }[]>(
    'select state from pg_stat_activity where pid = $1',
    [pid],
  );
  return row?.state ?? null;
}
