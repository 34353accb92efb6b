import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import type postgres from 'postgres';

/** One PostgreSQL connection of a database, as pg_stat_activity shows it. */
export interface DatabaseConnection {
  backendPid: number;
  applicationName: string;
  state: string | null;
  /** The last statement the connection ran (a LISTEN connection's is `listen "<channel>"`). */
  query: string;
  clientPort: number | null;
}

/** The connections a process on this machine holds to PostgreSQL, and those of no such process. */
export interface ConnectionsByProcess {
  byProcess: Map<number, DatabaseConnection[]>;
  unclaimed: DatabaseConnection[];
}

/** A connection that waits for NOTIFYs: the last thing it ran was a LISTEN. */
export function isListenConnection(connection: DatabaseConnection): boolean {
  return /^\s*listen\s/i.test(connection.query) && connection.state === 'idle';
}

/**
 * The local TCP ports of the sockets process `pid` holds open: its file descriptors name socket
 * inodes, and /proc/<pid>/net/tcp{,6} (the process's network namespace) gives each inode's
 * local address. A client connection's local port is pg_stat_activity's `client_port`, so this
 * says which process owns a backend without trusting anything the client reports. Only
 * connections to `remotePort` count: one local port may serve connections to other places.
 */
export function localPortsOf(pid: number, remotePort: number): Set<number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const found = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (found) inodes.add(found[1] as string);
    } catch {
      // The descriptor closed between the listing and the read.
    }
  }
  const ports = new Set<number>();
  for (const table of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [, local, remote] = fields;
      const inode = fields[9];
      if (!local || !remote || !inode || !inodes.has(inode)) continue;
      if (parseInt(remote.split(':')[1] as string, 16) !== remotePort) continue;
      ports.add(parseInt(local.split(':')[1] as string, 16));
    }
  }
  return ports;
}

/**
 * The client connections to the database of `databaseUrl` now (through `sql`, whose own
 * connection is left out), each given to the process of `pids` that holds it.
 */
export async function connectionsByProcess(
  sql: postgres.Sql,
  databaseUrl: string,
  pids: readonly number[],
): Promise<ConnectionsByProcess> {
  const url = new URL(databaseUrl);
  const database = decodeURIComponent(url.pathname.slice(1));
  const serverPort = Number(url.port || 5432);
  const rows = await sql<
    {
      pid: number;
      application_name: string;
      state: string | null;
      query: string;
      client_port: number | null;
    }[]
  >`
    select pid, application_name, state, query, client_port
    from pg_stat_activity
    where datname = ${database} and backend_type = 'client backend' and pid <> pg_backend_pid()`;
  const owners = new Map<number, number>();
  for (const pid of pids) for (const port of localPortsOf(pid, serverPort)) owners.set(port, pid);
  const byProcess = new Map<number, DatabaseConnection[]>(pids.map((pid) => [pid, []]));
  const unclaimed: DatabaseConnection[] = [];
  for (const row of rows) {
    const connection: DatabaseConnection = {
      backendPid: row.pid,
      applicationName: row.application_name,
      state: row.state,
      query: row.query,
      clientPort: row.client_port,
    };
    const owner = row.client_port === null ? undefined : owners.get(row.client_port);
    if (owner === undefined) unclaimed.push(connection);
    else byProcess.get(owner)?.push(connection);
  }
  return { byProcess, unclaimed };
}
