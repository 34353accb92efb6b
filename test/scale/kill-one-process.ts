/**
 * The kill-one-process test (issue 24): a cluster (deploy/cluster.ts: PostgreSQL, s3rver, N
 * service processes, haproxy) under a mixed workload through the proxy, with one process killed
 * by `kill -9` in the middle (`--mode kill`), or every process restarted one at a time with
 * SIGTERM, each replacement healthy before the next (`--mode rolling`). Then it checks that no
 * acknowledged write was lost, that every socket got every change of its agent exactly once, that
 * version numbers and receipt chains are whole, and prints figures.
 *
 *   npx tsx test/scale/kill-one-process.ts [--processes 3] [--sockets 60] [--seconds 20]
 *     [--mode kill|rolling] [--workers 8] [--database-prefix scale_]
 *
 * Small by default (for .ci/run); by hand at full scale: `--processes 3 --sockets 1000`.
 * `DATABASE_URL`, when set, names the PostgreSQL server to make its database in; else a
 * throw-away PostgreSQL 15 runs. One line per check, then `N passed, M failed`; exit 1 on a
 * failure.
 *
 * Retries: a read may be retried; a write only with its Idempotency-Key (sign-ups take none, so a
 * sign-up that fails is counted as unacknowledged, never retried).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { io, type Socket } from 'socket.io-client';
import { startCluster, type Cluster, type ClusterProcess } from '../../deploy/cluster.ts';
import { sha256 } from '../helpers/digests.ts';
import { receiptHash, verifies, type Jwks } from '../helpers/receipt-chain.ts';
import type { Receipt } from '../helpers/wire-types.ts';

const { values } = parseArgs({
  options: {
    processes: { type: 'string', default: '3' },
    sockets: { type: 'string', default: '60' },
    seconds: { type: 'string', default: '20' },
    mode: { type: 'string', default: 'kill' },
    workers: { type: 'string', default: '8' },
    'database-prefix': { type: 'string', default: 'scale_' },
  },
});
const PROCESSES = Number(values.processes);
const SOCKETS = Number(values.sockets);
const SECONDS = Number(values.seconds);
const WORKERS = Number(values.workers);
const MODE = values.mode;
if (MODE !== 'kill' && MODE !== 'rolling') throw new Error('--mode is kill or rolling');
if (MODE === 'kill' && PROCESSES < 2) throw new Error('--mode kill needs 2 processes or more');
/** Sockets per agent (20 is the most an agent may hold; a few share each agent's feed). */
const SOCKETS_PER_AGENT = 4;

const say = (line: string) => process.stdout.write(`${line}\n`);
const percentile = (sorted: number[], p: number) =>
  sorted.length === 0
    ? NaN
    : (sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number);

// ---------------------------------------------------------------------------------------------
// Requests through the proxy, counted.

interface Figures {
  requests: number;
  failedAttempts: number;
  /** Failed attempts while a process was being killed or restarted (and until healthy). */
  disruptionErrors: number;
  acknowledged: Record<string, number>;
  unacknowledged: Record<string, number>;
  refused: Record<string, number>;
  errorKinds: Map<string, number>;
}
const figures: Figures = {
  requests: 0,
  failedAttempts: 0,
  disruptionErrors: 0,
  acknowledged: {},
  unacknowledged: {},
  refused: {},
  errorKinds: new Map(),
};
const bump = (table: Record<string, number>, key: string) => (table[key] = (table[key] ?? 0) + 1);
let disrupting = false;

interface Answer {
  status: number;
  body: unknown;
  bytes: Uint8Array;
}

let baseUrl = '';

/** Whether a failed attempt may have reached no one or been cut off: worth another try. */
const transient = (status: number, body: unknown) =>
  status === 502 ||
  status === 503 ||
  status === 504 ||
  (status === 409 &&
    ['idempotency_key_in_use', 'conflict'].includes((body as { code?: string })?.code ?? ''));

/**
 * One call through the proxy. `retry`: try again on a network error or a transient answer, for
 * up to 30 s (only reads, and writes carrying an Idempotency-Key).
 */
async function call(
  method: string,
  path: string,
  options: {
    token?: string;
    json?: unknown;
    body?: Uint8Array<ArrayBuffer>;
    key?: string;
    retry: boolean;
  },
): Promise<Answer | null> {
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.key) headers['idempotency-key'] = options.key;
  let body: Uint8Array<ArrayBuffer> | string | undefined = options.body;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  const deadline = Date.now() + 30_000;
  for (;;) {
    figures.requests++;
    let failure: string;
    try {
      const response = await fetch(baseUrl + path, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal: AbortSignal.timeout(75_000),
      });
      const bytes = new Uint8Array(await response.arrayBuffer());
      const text = new TextDecoder().decode(bytes);
      let parsed: unknown = null;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        parsed = text;
      }
      if (!transient(response.status, parsed))
        return { status: response.status, body: parsed, bytes };
      failure = `${response.status} ${(parsed as { code?: string })?.code ?? ''}`.trim();
    } catch (error) {
      failure = `network: ${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).name}`;
    }
    figures.failedAttempts++;
    if (disrupting) figures.disruptionErrors++;
    figures.errorKinds.set(failure, (figures.errorKinds.get(failure) ?? 0) + 1);
    if (!options.retry || Date.now() > deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200));
  }
}

// ---------------------------------------------------------------------------------------------
// What the workload made, and what it was told.

interface AgentState {
  agentId: string;
  name: string;
  token: string;
  workspaceId: string;
  partner?: AgentState;
  /** The workspaces it may write in: its own, and its partner's. */
  workspaces: string[];
  pollCursor: string | null;
}

interface SavedVersion {
  workspaceId: string;
  path: string;
  version: number;
  sha256: string;
}

interface SocketState {
  agent: AgentState;
  socket: Socket;
  startCursor: string;
  last: string;
  eventIds: string[];
  connected: boolean;
  connects: number;
  disconnectedAt: number | null;
  /** ms from the disruption's start to this socket's reconnection, when it dropped then. */
  reconnectAfterDisruption: number[];
  /** ms each reconnection took, from the drop. */
  downtimes: number[];
}

const agents: AgentState[] = [];
const lateSignups: { agentId: string; token: string }[] = [];
const saves: SavedVersion[] = [];
const messages: { workspaceId: string; messageId: string }[] = [];
const knocks: { knockId: string; token: string }[] = [];
const sockets: SocketState[] = [];
let disruptionStartedAt = 0;

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;

async function signUp(name: string): Promise<{ agent_id: string; api_token: string } | null> {
  const answer = await call('POST', '/agents', { json: { name }, retry: false });
  if (answer?.status === 201) return answer.body as { agent_id: string; api_token: string };
  return null;
}

async function setUp(count: number): Promise<void> {
  const made: AgentState[] = [];
  await inParallel(count, 16, async (index) => {
    const signed = await signUp(`scale-${index}-${randomBytes(3).toString('hex')}`);
    if (!signed) throw new Error(`sign-up ${index} failed before the test began`);
    const workspace = await call('POST', '/workspaces', {
      token: signed.api_token,
      json: { name: `w${index}` },
      key: randomUUID(),
      retry: true,
    });
    if (workspace?.status !== 201) throw new Error(`create_workspace failed: ${workspace?.status}`);
    made[index] = {
      agentId: signed.agent_id,
      name: `scale-${index}`,
      token: signed.api_token,
      workspaceId: (workspace.body as { workspace_id: string }).workspace_id,
      workspaces: [],
      pollCursor: null,
    };
  });
  // Partners: each pair shares both workspaces, so messages and saves reach the other's feed.
  await inParallel(Math.floor(count / 2), 16, async (pair) => {
    const a = made[pair * 2] as AgentState;
    const b = made[pair * 2 + 1] as AgentState;
    for (const [owner, guest] of [
      [a, b],
      [b, a],
    ] as const) {
      const invite = await call('POST', `/workspaces/${owner.workspaceId}/invites`, {
        token: owner.token,
        json: {},
        retry: false,
      });
      if (invite?.status !== 201) throw new Error(`create_invite failed: ${invite?.status}`);
      const redeemed = await call('POST', '/invites/redeem', {
        token: guest.token,
        json: { invite_token: (invite.body as { invite_token: string }).invite_token },
        key: randomUUID(),
        retry: true,
      });
      if (redeemed?.status !== 200) throw new Error(`redeem_invite failed: ${redeemed?.status}`);
    }
    a.partner = b;
    b.partner = a;
  });
  for (const agent of made) {
    agent.workspaces = [agent.workspaceId, ...(agent.partner ? [agent.partner.workspaceId] : [])];
    agents.push(agent);
  }
}

async function inParallel(
  count: number,
  width: number,
  run: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, count) }, async () => {
      while (next < count) await run(next++);
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Sockets: WebSocket transport through the proxy, reconnecting with the newest cursor.

function openSocket(agent: AgentState): Promise<void> {
  const state: SocketState = {
    agent,
    socket: undefined as unknown as Socket,
    startCursor: 'c0',
    last: 'c0',
    eventIds: [],
    connected: false,
    connects: 0,
    disconnectedAt: null,
    reconnectAfterDisruption: [],
    downtimes: [],
  };
  const socket = io(baseUrl, {
    transports: ['websocket'],
    forceNew: true,
    reconnectionDelay: 100,
    reconnectionDelayMax: 1000,
    // The function form: every reconnection sends the newest cursor.
    auth: (callback) => callback({ token: agent.token, cursor: state.last }),
  });
  state.socket = socket;
  sockets.push(state);
  socket.on('change', (event: { event_id: string; cursor: string }) => {
    state.eventIds.push(event.event_id);
    state.last = event.cursor;
  });
  socket.on('disconnect', (reason) => {
    state.connected = false;
    state.disconnectedAt = Date.now();
    // The server closed it (a process stopping): socket.io leaves that one to the client.
    if (reason === 'io server disconnect') socket.connect();
  });
  return new Promise((resolve, reject) => {
    socket.on('connect', () => {
      state.connected = true;
      state.connects++;
      if (state.disconnectedAt !== null) {
        state.downtimes.push(Date.now() - state.disconnectedAt);
        if (disruptionStartedAt > 0 && state.disconnectedAt >= disruptionStartedAt)
          state.reconnectAfterDisruption.push(Date.now() - disruptionStartedAt);
      }
      resolve();
    });
    socket.on('connect_error', (error: Error & { data?: { code?: string } }) => {
      if (error.data?.code) reject(new Error(`socket refused: ${error.data.code}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The workload.

async function saveFile(agent: AgentState): Promise<void> {
  const workspaceId = pick(agent.workspaces);
  // Markdown with a YAML header: every version's bytes are kept (of other files, the newest).
  const path = `notes/f${Math.floor(Math.random() * 3)}.md`;
  const bytes = new TextEncoder().encode(
    `---\nnote: ${randomUUID()}\n---\n${randomBytes(50 + Math.floor(Math.random() * 1000)).toString('hex')}\n`,
  );
  const answer = await call('PUT', `/workspaces/${workspaceId}/files/${path}`, {
    token: agent.token,
    body: bytes,
    key: randomUUID(),
    retry: true,
  });
  if (answer?.status === 201) {
    const receipt = (answer.body as { receipt: { version: number; sha256: string } }).receipt;
    if (receipt.sha256 !== sha256(bytes)) throw new Error('a receipt names other bytes');
    saves.push({ workspaceId, path, version: receipt.version, sha256: receipt.sha256 });
    bump(figures.acknowledged, 'file saves');
  } else bump(figures.unacknowledged, 'file saves');
}

async function sendMessage(agent: AgentState): Promise<void> {
  const workspaceId = pick(agent.workspaces);
  const answer = await call('POST', `/workspaces/${workspaceId}/messages`, {
    token: agent.token,
    json: { text: `hello ${randomUUID()}` },
    key: randomUUID(),
    retry: true,
  });
  if (answer?.status === 201) {
    messages.push({ workspaceId, messageId: (answer.body as { message_id: string }).message_id });
    bump(figures.acknowledged, 'messages');
  } else bump(figures.unacknowledged, 'messages');
}

async function knock(agent: AgentState): Promise<void> {
  const target = pick(agents);
  if (target === agent) return;
  const answer = await call('POST', `/agents/${target.agentId}/knock`, {
    token: agent.token,
    json: { note: 'shall we talk?' },
    key: randomUUID(),
    retry: true,
  });
  if (answer?.status === 201) {
    knocks.push({ knockId: (answer.body as { knock_id: string }).knock_id, token: agent.token });
    bump(figures.acknowledged, 'knocks');
  } else if (answer && answer.status < 500) {
    // One pending knock per target, 20 an hour: refusals the rules promise, not failures.
    bump(figures.refused, `knock ${(answer.body as { code?: string })?.code ?? answer.status}`);
  } else bump(figures.unacknowledged, 'knocks');
}

async function longPoll(agent: AgentState): Promise<void> {
  const after = agent.pollCursor ? `after=${agent.pollCursor}&` : '';
  const answer = await call('GET', `/changes/wait?${after}timeout=2`, {
    token: agent.token,
    retry: true,
  });
  if (answer?.status === 200) agent.pollCursor = (answer.body as { cursor: string }).cursor;
}

async function lateSignUp(): Promise<void> {
  const signed = await signUp(`late-${randomBytes(4).toString('hex')}`);
  if (signed) {
    lateSignups.push({ agentId: signed.agent_id, token: signed.api_token });
    bump(figures.acknowledged, 'sign-ups');
  } else bump(figures.unacknowledged, 'sign-ups');
}

async function workload(until: () => boolean): Promise<void> {
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      while (!until()) {
        const agent = pick(agents);
        const roll = Math.random();
        if (roll < 0.4) await saveFile(agent);
        else if (roll < 0.65) await sendMessage(agent);
        else if (roll < 0.75) await knock(agent);
        else if (roll < 0.92) await longPoll(agent);
        else await lateSignUp();
      }
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// The disruption.

async function disrupt(cluster: Cluster): Promise<ClusterProcess[]> {
  disrupting = true;
  disruptionStartedAt = Date.now();
  try {
    if (MODE === 'kill') {
      const victim = cluster.processes[1] as ClusterProcess;
      say(`killing ${victim.name} (pid ${victim.pid}) with SIGKILL`);
      victim.kill('SIGKILL');
      await victim.exited();
      await victim.waitOut(10_000);
      return [victim];
    }
    for (const process of cluster.processes) {
      say(`rolling: SIGTERM to ${process.name} (pid ${process.pid})`);
      process.kill('SIGTERM');
      const exit = await process.exited();
      say(`rolling: ${process.name} exited ${exit.code ?? exit.signal}; starting it again`);
      await process.restart();
      await process.waitHealthy(60_000);
      say(`rolling: ${process.name} healthy again (pid ${process.pid})`);
    }
    return [...cluster.processes];
  } finally {
    disrupting = false;
  }
}

// ---------------------------------------------------------------------------------------------
// The checks.

const results: { ok: boolean; line: string }[] = [];
function check(ok: boolean, sentence: string, detail = ''): void {
  results.push({ ok, line: sentence });
  say(`${ok ? 'ok' : 'FAILED'}: ${sentence}${!ok && detail ? ` (${detail})` : ''}`);
}

async function feedOf(token: string, from: string): Promise<string[]> {
  const ids: string[] = [];
  let after = from;
  for (;;) {
    const answer = await call('GET', `/changes?after=${after}&limit=100`, { token, retry: true });
    if (answer?.status !== 200) throw new Error(`changes answered ${answer?.status}`);
    const page = answer.body as { changes: { event_id: string; cursor: string }[]; cursor: string };
    if (page.changes.length === 0) return ids;
    ids.push(...page.changes.map((change) => change.event_id));
    after = page.cursor;
  }
}

async function allPages<T>(token: string, path: string, field: string): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  do {
    const separator = path.includes('?') ? '&' : '?';
    const answer = await call(
      'GET',
      `${path}${separator}limit=100${cursor ? `&cursor=${cursor}` : ''}`,
      {
        token,
        retry: true,
      },
    );
    if (answer?.status !== 200) throw new Error(`${path} answered ${answer?.status}`);
    const page = answer.body as Record<string, unknown> & { next_cursor: string | null };
    items.push(...(page[field] as T[]));
    cursor = page.next_cursor;
  } while (cursor);
  return items;
}

async function checkEverything(cluster: Cluster, disrupted: ClusterProcess[]): Promise<void> {
  const ownerOf = new Map(
    agents.flatMap((agent) => agent.workspaces.map((w) => [w, agent] as const)),
  );

  // Files at their acknowledged versions, with the right bytes.
  let wrongBytes = 0;
  let wrongExample = '';
  await inParallel(saves.length, 16, async (index) => {
    const save = saves[index] as SavedVersion;
    const owner = ownerOf.get(save.workspaceId) as AgentState;
    const answer = await call(
      'GET',
      `/workspaces/${save.workspaceId}/files/${save.path}?version=${save.version}`,
      { token: owner.token, retry: true },
    );
    if (answer?.status !== 200 || sha256(answer.bytes) !== save.sha256) {
      wrongBytes++;
      wrongExample ||= `version ${save.version} of ${save.path}: ${answer?.status} ${answer ? sha256(answer.bytes) : ''} ${new TextDecoder().decode(answer?.bytes.slice(0, 200))}`;
    }
  });
  check(
    wrongBytes === 0,
    `every acknowledged file save (${saves.length}) reads back at its version with the bytes saved`,
    `${wrongBytes} missing or different; e.g. ${wrongExample}`,
  );
  const versionKeys = new Set(saves.map((s) => `${s.workspaceId}/${s.path}/${s.version}`));
  check(versionKeys.size === saves.length, 'no two acknowledged saves were given one version');

  // Versions 1..n and receipt chains, per workspace.
  const jwks = (await (await fetch(`${baseUrl}/.well-known/service-keys.json`)).json()) as Jwks;
  let gaps = 0;
  let brokenChains = 0;
  let receiptsChecked = 0;
  const workspaces = [...new Set(agents.map((agent) => agent.workspaceId))];
  await inParallel(workspaces.length, 8, async (index) => {
    const workspaceId = workspaces[index] as string;
    const owner = ownerOf.get(workspaceId) as AgentState;
    const receipts = await allPages<Receipt & { path: string; version: number; action: string }>(
      owner.token,
      `/workspaces/${workspaceId}/receipts`,
      'receipts',
    );
    receiptsChecked += receipts.length;
    const versions = new Map<string, number[]>();
    for (const receipt of receipts) {
      if (receipt.action !== 'save' && receipt.action !== 'delete') continue;
      versions.set(receipt.path, [...(versions.get(receipt.path) ?? []), receipt.version]);
    }
    for (const list of versions.values()) {
      list.sort((a, b) => a - b);
      if (list.some((version, at) => version !== at + 1)) gaps++;
    }
    // The chain: each names the one before; one unbroken walk from the first holds them all.
    const byPrev = new Map<string | null, Receipt>();
    let fork = false;
    for (const receipt of receipts) {
      if (byPrev.has(receipt.prev_hash)) fork = true;
      byPrev.set(receipt.prev_hash, receipt);
    }
    let walked = 0;
    for (let next = byPrev.get(null); next; next = byPrev.get(receiptHash(next))) walked++;
    if (fork || walked !== receipts.length || !receipts.every((r) => verifies(r, jwks)))
      brokenChains++;
  });
  check(
    gaps === 0,
    `every file's version numbers run 1..n with no gap (${workspaces.length} workspaces)`,
    `${gaps} files with a gap`,
  );
  check(
    brokenChains === 0,
    `every workspace's receipt chain (${receiptsChecked} receipts) is one unbroken chain that verifies with the published keys`,
    `${brokenChains} broken`,
  );

  // Messages and knocks.
  const seenMessages = new Set<string>();
  for (const workspaceId of workspaces) {
    const owner = ownerOf.get(workspaceId) as AgentState;
    let after: string | null = null;
    do {
      const query: string = after ? `?after=${after}&limit=100` : '?limit=100';
      const answer = await call('GET', `/workspaces/${workspaceId}/messages${query}`, {
        token: owner.token,
        retry: true,
      });
      const page = answer?.body as {
        messages: { message_id: string }[];
        next_after: string | null;
      };
      for (const message of page?.messages ?? []) seenMessages.add(message.message_id);
      after = page?.next_after ?? null;
    } while (after);
  }
  const lostMessages = messages.filter((m) => !seenMessages.has(m.messageId)).length;
  check(
    lostMessages === 0,
    `every acknowledged message (${messages.length}) is in its workspace`,
    `${lostMessages} missing`,
  );
  let lostKnocks = 0;
  await inParallel(knocks.length, 16, async (index) => {
    const { knockId, token } = knocks[index] as { knockId: string; token: string };
    const answer = await call('GET', `/knocks/${knockId}`, { token, retry: true });
    if (answer?.status !== 200) lostKnocks++;
  });
  check(
    lostKnocks === 0,
    `every acknowledged knock (${knocks.length}) is there`,
    `${lostKnocks} missing`,
  );
  let lostAgents = 0;
  await inParallel(lateSignups.length, 16, async (index) => {
    const { agentId, token } = lateSignups[index] as { agentId: string; token: string };
    const answer = await call('GET', '/whoami', { token, retry: true });
    if (answer?.status !== 200 || (answer.body as { agent_id: string }).agent_id !== agentId)
      lostAgents++;
  });
  check(
    lostAgents === 0,
    `every acknowledged sign-up during the run (${lateSignups.length}) can call whoami`,
    `${lostAgents} cannot`,
  );

  // Sockets: caught up, then each one's events against its agent's feed.
  const feeds = new Map<AgentState, string[]>();
  for (const agent of agents) feeds.set(agent, await feedOf(agent.token, 'c0'));
  const deadline = Date.now() + 30_000;
  const behind = () =>
    sockets.filter((s) => s.eventIds.length < (feeds.get(s.agent) as string[]).length);
  while (behind().length > 0 && Date.now() < deadline) {
    // Pushes still on their way: the sockets are waited for, never the other way round.
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  let gapsOrDuplicates = 0;
  let example = '';
  for (const state of sockets) {
    const feed = feeds.get(state.agent) as string[];
    const got = state.eventIds;
    const duplicates = got.length - new Set(got).size;
    const missing = feed.filter((id) => !got.includes(id)).length;
    const inOrder = got.length === feed.length && got.every((id, at) => id === feed[at]);
    if (!inOrder) {
      gapsOrDuplicates++;
      example ||= `a socket got ${got.length} events, its feed holds ${feed.length}: ${missing} missing, ${duplicates} twice`;
    }
  }
  check(
    gapsOrDuplicates === 0,
    `every socket (${sockets.length}) got every change of its agent exactly once, in order, as GET /changes reads the feed`,
    `${gapsOrDuplicates} sockets differ; e.g. ${example}`,
  );

  // Processes.
  const unexpected = cluster.processes.flatMap((p) =>
    p.exits
      .filter((exit) => !disrupted.includes(p) || exit.sentSignal === null)
      .map((e) => `${p.name}: ${e.code ?? e.signal}`),
  );
  check(
    unexpected.length === 0 && cluster.processes.every((p) => p.running || disrupted.includes(p)),
    MODE === 'kill'
      ? 'no process other than the killed one exited'
      : 'no process exited but the ones the rolling restart stopped',
    unexpected.join(', '),
  );
  if (MODE === 'rolling') {
    const unclean = cluster.processes.flatMap((p) => p.exits.filter((e) => e.code !== 0));
    check(
      unclean.length === 0,
      'every process stopped by SIGTERM drained and exited 0',
      unclean.map((e) => `pid ${e.pid}: ${e.code ?? e.signal}`).join(', '),
    );
  }
  const dropped = sockets.filter(
    (s) => s.disconnectedAt !== null && s.disconnectedAt >= disruptionStartedAt,
  );
  const stillDown = dropped.filter((s) => !s.connected).length;
  check(
    dropped.length > 0 && stillDown === 0,
    `every socket dropped by the ${MODE === 'kill' ? 'kill' : 'restarts'} (${dropped.length}) reconnected`,
    dropped.length === 0
      ? 'no socket dropped: were any on the stopped processes?'
      : `${stillDown} did not`,
  );
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = Date.now();
  const cluster = await startCluster({
    processes: PROCESSES,
    ...(process.env.DATABASE_URL ? { databaseUrl: process.env.DATABASE_URL } : {}),
    databasePrefix: values['database-prefix'],
    log: (line) => say(`  [cluster] ${line}`),
  });
  try {
    baseUrl = cluster.proxyUrl;
    const agentCount = Math.max(4, Math.ceil(SOCKETS / SOCKETS_PER_AGENT));
    say(
      `${MODE} test: ${PROCESSES} processes, ${SOCKETS} sockets, ${agentCount} agents, ${WORKERS} workers`,
    );
    await setUp(agentCount);
    await inParallel(SOCKETS, 50, async (index) =>
      openSocket(agents[index % agentCount] as AgentState),
    );
    say(`set up in ${((Date.now() - started) / 1000).toFixed(1)} s; the workload runs`);

    const workStarted = Date.now();
    let disruptionDone = false;
    const running = workload(() => disruptionDone && Date.now() - workStarted > SECONDS * 1000);
    await new Promise((resolve) => setTimeout(resolve, (SECONDS * 1000) / 3));
    const disruptionStarted = Date.now();
    const disrupted = await disrupt(cluster).finally(() => (disruptionDone = true));
    const disruptionMs = Date.now() - disruptionStarted;
    // A few more seconds of work after the last restart.
    await new Promise((resolve) => setTimeout(resolve, Math.min(5000, (SECONDS * 1000) / 3)));
    await running;
    const workloadRequests = figures.requests;
    const workloadSeconds = (Date.now() - workStarted) / 1000;
    say('the workload stopped; checking');

    await checkEverything(cluster, disrupted);

    const reconnectTimes = sockets.flatMap((s) => s.reconnectAfterDisruption).sort((a, b) => a - b);
    say('');
    say('figures:');
    say(
      `  requests: ${workloadRequests} by the workload in ${workloadSeconds.toFixed(1)} s (${(workloadRequests / workloadSeconds).toFixed(0)}/s), ${figures.requests - workloadRequests} by the checks; failed attempts ${figures.failedAttempts}`,
    );
    say(`  writes acknowledged: ${JSON.stringify(figures.acknowledged)}`);
    say(`  writes not acknowledged: ${JSON.stringify(figures.unacknowledged)}`);
    say(`  refusals the rules promise: ${JSON.stringify(figures.refused)}`);
    say(
      `  sockets: ${sockets.length}, reconnects ${sockets.reduce((n, s) => n + s.connects - 1, 0)}`,
    );
    const downtimes = sockets.flatMap((s) => s.downtimes).sort((a, b) => a - b);
    if (MODE === 'kill')
      say(
        `  time for the killed process's sockets to reconnect after the kill: p50 ${percentile(reconnectTimes, 50)} ms, p99 ${percentile(reconnectTimes, 99)} ms (${reconnectTimes.length} sockets)`,
      );
    say(
      `  time from a socket's drop to its reconnection: p50 ${percentile(downtimes, 50)} ms, p99 ${percentile(downtimes, 99)} ms (${downtimes.length} reconnections)`,
    );
    say(
      `  ${MODE === 'kill' ? 'kill' : 'rolling restart'} took ${disruptionMs} ms (until haproxy had it out${MODE === 'rolling' ? ', each back healthy' : ''})`,
    );
    say(
      `  errors the workload saw during it: ${figures.disruptionErrors}; by kind: ${JSON.stringify(Object.fromEntries(figures.errorKinds))}`,
    );
  } finally {
    for (const state of sockets) state.socket.close();
    const failed = results.filter((r) => !r.ok).length;
    if (failed > 0) {
      for (const p of cluster.processes)
        say(`--- ${p.name} stderr (tail) ---\n${p.stderr().slice(-3000)}`);
    }
    await cluster.stop();
  }
  const failed = results.filter((r) => !r.ok).length;
  say(`${results.length - failed} passed, ${failed} failed`);
  return failed === 0 && results.length > 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    say(
      `the test could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    say(
      `${results.filter((r) => r.ok).length} passed, ${results.filter((r) => !r.ok).length + 1} failed`,
    );
    process.exit(1);
  },
);
