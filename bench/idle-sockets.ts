/**
 * Idle sockets: the real service (its own process, PGlite, a new DATA_DIR) takes SOCKETS
 * socket.io connections of one agent, all opened at once, while another process asks /health
 * every few milliseconds; then the same for bare socket.io on uWS (./bare-socketio-uws.ts, the
 * baseline), also in a process of its own. Prints the RSS the sockets added to each server,
 * per socket, and /health p99 while they connected, beside the targets (10,000 idle sockets
 * under 100 MB; /health under 200 ms). This process holds only the client ends. Never fails:
 * when the file descriptor limit is too low for every socket, it says so and measures fewer.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { io, type Socket } from 'socket.io-client';

const WANTED = Number(process.env.IDLE_SOCKETS ?? 10_000);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

// What `npm start` runs is the built JavaScript: brought up to date first, as it does.
execFileSync(process.execPath, [`${ROOT}deploy/build.mjs`], { stdio: 'inherit' });

/** This process holds the client end of every socket, the servers' processes the others. */
function socketsAllowed(): { count: number; why?: string } {
  const limits = readFileSync('/proc/self/limits', 'utf8');
  const soft = Number(/Max open files\s+(\d+)/.exec(limits)?.[1] ?? 1024);
  const room = soft - 200;
  if (room >= WANTED) return { count: WANTED };
  return {
    count: Math.max(room, 0),
    why: `ulimit -n is ${soft} here (a process cannot raise its own soft limit from Node.js): ${room} sockets measured; run with ulimit -n ${WANTED + 500} for all`,
  };
}

const rssMb = (pid: number) =>
  Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/**
 * What asks /health every ASK_EVERY_MS, in a process of its own until its stdin ends, then prints the
 * latencies as JSON. Not in this process: this one runs the client ends of every socket, whose
 * own work would otherwise be timed as the service's (a first version of this bench did so, and
 * read about 1 s where the service answered within 70 ms).
 */
const ASK_EVERY_MS = 5;
const HEALTH_ASKER = `
const url = process.argv[1];
const ASK_EVERY_MS = Number(process.argv[2]);
const times = [];
let finished = false;
process.stdin.on('end', () => (finished = true)).resume();
while (!finished) {
  const started = performance.now();
  await fetch(url).then((response) => response.arrayBuffer(), () => undefined);
  times.push(performance.now() - started);
  await new Promise((resolve) => setTimeout(resolve, ASK_EVERY_MS));
}
process.stdout.write(JSON.stringify(times));
`;

/** Asks /health every ASK_EVERY_MS from another process until `done`; resolves with the latencies. */
async function healthTimes(baseUrl: string, done: Promise<unknown>): Promise<number[]> {
  const asker = spawn(
    process.execPath,
    ['--input-type=module', '-e', HEALTH_ASKER, `${baseUrl}/health`, String(ASK_EVERY_MS)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let printed = '';
  asker.stdout?.setEncoding('utf8').on('data', (chunk: string) => (printed += chunk));
  const exited = new Promise((resolve) => asker.once('exit', resolve));
  await done.catch(() => undefined);
  asker.stdin?.end();
  await exited;
  return JSON.parse(printed || '[]') as number[];
}

async function connectAll(
  baseUrl: string,
  count: number,
  auth: Record<string, string>,
): Promise<Socket[]> {
  const sockets = Array.from({ length: count }, () =>
    io(baseUrl, { transports: ['websocket'], auth, reconnection: false, forceNew: true }),
  );
  // A connection the listen backlog dropped is counted, not fatal: the figures say how many.
  const connected = await Promise.all(
    sockets.map(
      (socket) =>
        new Promise<boolean>((resolve) => {
          socket.once('connect', () => resolve(true));
          socket.once('connect_error', () => resolve(false));
        }),
    ),
  );
  return sockets.filter((_, index) => connected[index]);
}

interface Figures {
  idleMb: number;
  withSocketsMb: number;
  healthP99Ms: number;
  healthSamples: number;
  connected: number;
  /** From the first connect asked to the last answered (or refused). */
  connectSeconds: number;
}

async function measure(
  pid: number,
  baseUrl: string,
  count: number,
  auth: Record<string, string>,
): Promise<Figures> {
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const idleMb = rssMb(pid);
  const started = performance.now();
  const connecting = connectAll(baseUrl, count, auth);
  const times = await healthTimes(baseUrl, connecting);
  const sockets = await connecting;
  const connectSeconds = (performance.now() - started) / 1000;
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const withSocketsMb = rssMb(pid);
  for (const socket of sockets) socket.disconnect();
  return {
    idleMb,
    withSocketsMb,
    healthP99Ms: percentile(times, 99),
    healthSamples: times.length,
    connected: sockets.length,
    connectSeconds,
  };
}

function listening(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let log = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      log += chunk;
      const url = /listening on (http:\/\/\S+)/.exec(log)?.[1];
      if (url) resolve(url);
    });
    child.once('exit', (code) => reject(new Error(`the service exited (${code}): ${log}`)));
  });
}

/** Runs `args` as a server in a process of its own, measures it, and stops it. */
async function inChild(
  args: string[],
  env: NodeJS.ProcessEnv,
  count: number,
  auth: (baseUrl: string) => Promise<Record<string, string>>,
): Promise<Figures> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  try {
    const baseUrl = await listening(child);
    return await measure(child.pid as number, baseUrl, count, await auth(baseUrl));
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

/** The service as `npm start` runs it, on a new PGlite database, its sockets all of one agent. */
async function service(count: number): Promise<Figures> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-service-idle-sockets-'));
  const signUp = async (baseUrl: string) => {
    const answer = await fetch(`${baseUrl}/agents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'idle sockets bench' }),
    });
    const { api_token: token } = (await answer.json()) as { api_token: string };
    return { token };
  };
  try {
    return await inChild(
      ['--max-semi-space-size=8', 'build/server/main.js'],
      {
        PORT: '0',
        SMTP_PORT: 'off',
        DATA_DIR: dataDir,
        DATABASE_URL: '',
        SOCKETS_PER_AGENT: String(count + 1),
        RATE_LIMIT_PER_MINUTE: '0',
      },
      count,
      signUp,
    );
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The baseline: bare socket.io on uWS (./bare-socketio-uws.ts), with the same node flags. */
function bare(count: number): Promise<Figures> {
  return inChild(
    ['--max-semi-space-size=8', '--import', 'tsx', 'bench/bare-socketio-uws.ts'],
    {},
    count,
    () => Promise.resolve({}),
  );
}

const { count, why } = socketsAllowed();
if (why) console.log(`idle sockets: ${why}`);
if (count > 0) {
  const real = await service(count);
  const raw = await bare(count);
  const added = (figures: Figures) => figures.withSocketsMb - figures.idleMb;
  console.log(
    `idle sockets: ${real.connected.toLocaleString('en')} of ${count.toLocaleString('en')} connected on the service add ${added(real).toFixed(0)} MB RSS ` +
      `(${((added(real) * 1048576) / Math.max(real.connected, 1) / 1024).toFixed(1)} KiB each; target: 10,000 under 100 MB), ` +
      `bare socket.io on uWS ${added(raw).toFixed(0)} MB for ${raw.connected.toLocaleString('en')} (each server in a process of its own)`,
  );
  console.log(
    `idle sockets: /health p99 ${real.healthP99Ms.toFixed(0)} ms while all connected at once ` +
      `(${real.healthSamples} asks from another process; target under 200 ms), bare ${raw.healthP99Ms.toFixed(0)} ms`,
  );
  // What the turns cost (server/app.ts): the crowd's handshakes wait, so all connect later.
  console.log(
    `idle sockets: all connected in ${real.connectSeconds.toFixed(1)} s on the service, ` +
      `${raw.connectSeconds.toFixed(1)} s on bare socket.io`,
  );
}
