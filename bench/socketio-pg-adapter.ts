/**
 * The baseline for cross-process push: two raw socket.io servers, each in a process of its own,
 * joined by @socket.io/postgres-adapter on one PostgreSQL database (the shape the service did
 * not take: the adapter NOTIFYs every emitted packet to every process). `POST /emit` on a server
 * answers `{feedback_id}` and emits one `change` to the sockets named in `x-socket` (comma-
 * separated), wherever they are connected; the client times its arrival on a socket of the same
 * server and on one of the other, from the same emit.
 *
 * Run as a script (`serve`), this file is one such server: it prints its port and runs until
 * its parent ends it.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { createAdapter } from '@socket.io/postgres-adapter';
import pg from 'pg';
import { Server as SocketIoServer } from 'socket.io';
import { closeAll, connectMany, type PushClient } from './clients.ts';

/** An emit later than this counts as lost, so one missing packet cannot hang the run. */
const LOST_AFTER_MS = 5_000;

/** The adapter's table for packets too large for a NOTIFY (its README's schema). */
const ATTACHMENTS_TABLE = `
  create table if not exists socket_io_attachments (
    id bigserial unique,
    created_at timestamptz default now(),
    payload bytea
  )`;

/**
 * Arrival times from the POST's start: with the adapter, on the same server and on the other
 * from one emit; without it (`raw`), a plain socket.io server's emit to its own socket.
 */
export interface AdapterPushSamples {
  sameProcess: number[];
  crossProcess: number[];
  raw: number[];
  lost: number;
}

/** With a database, joined to the others by the adapter; without, plain socket.io. */
async function serve(databaseUrl: string | undefined): Promise<void> {
  const pool = databaseUrl ? new pg.Pool({ connectionString: databaseUrl, max: 4 }) : null;
  pool?.on('error', () => undefined);
  await pool?.query(ATTACHMENTS_TABLE);
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const targets = String(req.headers['x-socket'] ?? '')
        .split(',')
        .filter(Boolean);
      if (req.method !== 'POST' || req.url !== '/emit' || targets.length === 0) {
        res.writeHead(404).end();
        return;
      }
      const feedbackId = randomUUID();
      io.to(targets).emit('change', {
        type: 'feedback.received',
        data: { feedback_id: feedbackId },
      });
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ feedback_id: feedbackId }));
    });
  });
  const io = new SocketIoServer(server, {
    serveClient: false,
    ...(pool ? { adapter: createAdapter(pool) } : {}),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.stdout.write(`port ${(server.address() as AddressInfo).port}\n`);
  process.once('SIGTERM', () => {
    io.disconnectSockets(true);
    server.closeAllConnections();
    void io
      .close()
      .finally(() => void (pool?.end() ?? Promise.resolve()).finally(() => process.exit(0)));
  });
}

interface AdapterServer {
  baseUrl: string;
  pid: number;
  stop(): Promise<void>;
}

/** One server in a child process (no database: no adapter); `stop` ends it (SIGTERM, then SIGKILL). */
async function startAdapterServer(databaseUrl: string | null): Promise<AdapterServer> {
  const child = spawn(process.execPath, ['--import', 'tsx', import.meta.filename, 'serve'], {
    cwd: import.meta.dirname,
    env: { ...process.env, ADAPTER_DATABASE_URL: databaseUrl ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
    }
  };
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const found = /port (\d+)/.exec(output);
        if (found) resolve(Number(found[1]));
      });
      void exited.then(() => reject(new Error(`the adapter server exited: ${output}`)));
    });
    return { baseUrl: `http://127.0.0.1:${port}`, pid: child.pid as number, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * `rounds` emits one after another on server A, each to a socket on A and a socket on B at
 * once, both timed from the POST's start, taking turns with an emit of a plain socket.io
 * server (no adapter) to its own socket. Samples are filled in as they come.
 */
export async function measureAdapterPush(
  databaseUrl: string,
  rounds: number,
  samples: AdapterPushSamples,
  signal: AbortSignal,
): Promise<void> {
  const servers: AdapterServer[] = [];
  let clients: PushClient[] = [];
  try {
    servers.push(
      await startAdapterServer(databaseUrl),
      await startAdapterServer(databaseUrl),
      await startAdapterServer(null),
    );
    // B only holds the cross-process socket: the emits all go through A.
    const [a, , raw] = servers as [AdapterServer, AdapterServer, AdapterServer];
    for (const server of servers) {
      clients.push(...(await connectMany(server.baseUrl, [undefined], 1, false)));
    }
    const [onA, onB, onRaw] = clients as [PushClient, PushClient, PushClient];
    const emit = async (server: AdapterServer, to: readonly PushClient[]) => {
      const response = await fetch(`${server.baseUrl}/emit`, {
        method: 'POST',
        headers: { 'x-socket': to.map((client) => client.socket.id).join(',') },
      });
      if (response.status !== 202) throw new Error(`POST /emit answered ${response.status}`);
      return ((await response.json()) as { feedback_id: string }).feedback_id;
    };
    const round = async () => {
      let start = performance.now();
      let id = await emit(a, [onA, onB]);
      const [same, cross] = await Promise.all(
        [onA, onB].map((client) => client.arrival(id, LOST_AFTER_MS)),
      );
      if (same == null || cross == null) samples.lost++;
      const timed = [same == null ? null : same - start, cross == null ? null : cross - start];
      start = performance.now();
      id = await emit(raw, [onRaw]);
      const alone = await onRaw.arrival(id, LOST_AFTER_MS);
      if (alone == null) samples.lost++;
      return [...timed, alone == null ? null : alone - start];
    };
    // Untimed: the first emits warm the pool's connections and the servers' JIT.
    for (let i = 0; i < 20; i++) await round();
    for (let i = 0; i < rounds && !signal.aborted; i++) {
      const [same, cross, alone] = await round();
      if (same != null) samples.sameProcess.push(same);
      if (cross != null) samples.crossProcess.push(cross);
      if (alone != null) samples.raw.push(alone);
    }
  } finally {
    closeAll(clients);
    clients = [];
    await Promise.all(servers.map((server) => server.stop()));
  }
}

if (process.argv[2] === 'serve') {
  await serve(process.env.ADAPTER_DATABASE_URL || undefined);
}
