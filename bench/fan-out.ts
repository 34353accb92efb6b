/**
 * One write, many sockets: the time from a write's send to its push reaching each receiver,
 * and to the last of them. Shared by the store section (a listing reaching 1,000 watchers) and
 * the chat section (a message reaching the other members of a workspace), each beside the
 * floor here: socket.io on uWS with no auth, no storage and no feed, emitting on an HTTP POST,
 * with sockets of its own, open beside the service's server, the two taking turns write by write.
 *
 * The floor runs on uWS, the engine the service's sockets use, not on node:http as the push
 * section's does: attaching socket.io to uWS patches socket.io's Adapter for the whole process,
 * after which a node:http socket.io server crashes, and every service started earlier in a run
 * has attached it. The patched room emit is socket.io's fast path on uWS (encoded once, then
 * uWS publishes it to every socket of the room); one emit per socket, as the service's feed
 * sends a change to each agent, is measured beside it.
 *
 * Clients and servers share this process: the last arrival includes the clients' own decoding
 * of every push before it, on the floor as on the service.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type uWS from '@trufflesuite/uws-js-unofficial';
import { Server as SocketIoServer } from 'socket.io';
import type { Socket } from 'socket.io-client';
import { loadUws } from '../server/http/uws-engine.ts';
import { startBenchServer } from './bench-server.ts';
import { type TestServer } from '../test/helpers/server.ts';
import { TEST_DATABASE_URL } from '../test/helpers/storage.ts';
import type { Baseline } from './baselines.ts';
import { closeAll, connectMany, signUpMany, type PushClient } from './clients.ts';
import type { DriverKind } from './commands.ts';
import { scratchDatabase } from './scratch-database.ts';

/** A receiver that has not had its push after this long counts as lost, so none hangs the run. */
const LOST_AFTER_MS = 5_000;
const SET_UP_CONCURRENCY = 20;

/**
 * Filled in as the writes go, so the overall timeout can still print what was measured. Every
 * figure starts when the write was sent.
 */
export interface FanOutSamples {
  /** Per write: its last receiver. Writes that lost a receiver have none. */
  last: number[];
  /** Per write and receiver. */
  all: number[];
  /** The write's own round trip, for scale. */
  post: number[];
  writes: number;
  /** Receivers (summed over writes) that had nothing after LOST_AFTER_MS. */
  lost: number;
  /**
   * Per write with a `last` (in the same order), where the lane says it: how long the write
   * waited for bytes to be made durable (a listing is a file: the blob store's put, with its
   * fsyncs), and its `last` less that wait.
   */
  durable?: number[];
  lastLessDurable?: number[];
}

export function emptyFanOut(): FanOutSamples {
  return { last: [], all: [], post: [], writes: 0, lost: 0 };
}

interface ChangeEvent {
  type?: unknown;
  data?: Record<string, unknown>;
}

/** The key a push carries (a listing id, a message id), or undefined for other pushes. */
export type KeyOf = (event: ChangeEvent) => string | undefined;

/**
 * When each socket received each key. Pushes are kept whether or not anyone waits yet: they can
 * beat the write's HTTP answer, which is where the key is first known.
 */
export class Arrivals {
  private readonly times = new Map<string, number[]>();
  private readonly waiting = new Map<string, { count: number; done: () => void }>();
  private readonly detachers: (() => void)[] = [];

  constructor(sockets: readonly Socket[], keyOf: KeyOf) {
    for (const socket of sockets) {
      const listener = (event: ChangeEvent) => {
        const at = performance.now();
        const key = keyOf(event);
        if (key === undefined) return;
        const times = this.times.get(key) ?? [];
        times.push(at);
        this.times.set(key, times);
        const waiter = this.waiting.get(key);
        if (waiter && times.length >= waiter.count) waiter.done();
      };
      socket.on('change', listener);
      this.detachers.push(() => socket.off('change', listener));
    }
  }

  /** The arrival times of `key` once `count` sockets have it, or those there are at the timeout. */
  async take(key: string, count: number, timeoutMs: number): Promise<number[]> {
    if ((this.times.get(key)?.length ?? 0) < count) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.waiting.set(key, {
          count,
          done: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
      this.waiting.delete(key);
    }
    const times = this.times.get(key) ?? [];
    this.times.delete(key);
    return times;
  }

  detach(): void {
    for (const detach of this.detachers.splice(0)) detach();
  }
}

/** A write that answers the key its pushes carry. */
export type Write = () => Promise<string>;

/** One kind of write, timed at its receivers, into its samples. */
export interface FanOutLane {
  write: Write;
  arrivals: Arrivals;
  receivers: number;
  samples: FanOutSamples;
  /** How long the write just made waited for bytes to be durable (ms), when it saves any. */
  durableMs?: () => number;
}

async function timeOnce(lane: FanOutLane): Promise<void> {
  const { samples, receivers } = lane;
  const start = performance.now();
  const key = await lane.write();
  samples.post.push(performance.now() - start);
  const times = await lane.arrivals.take(key, receivers, LOST_AFTER_MS);
  samples.writes++;
  samples.lost += Math.max(0, receivers - times.length);
  for (const at of times) samples.all.push(at - start);
  if (times.length < receivers) return;
  const last = Math.max(...times) - start;
  samples.last.push(last);
  if (lane.durableMs) {
    const durable = lane.durableMs();
    (samples.durable ??= []).push(durable);
    (samples.lastLessDurable ??= []).push(last - durable);
  }
}

/**
 * N rounds of one write per lane, one write at a time, each timed until its push has reached
 * every receiver. The lanes take turns (a different one first each round), so load on the
 * machine that comes and goes weighs on all of them alike.
 */
export async function timeInTurns(
  lanes: readonly FanOutLane[],
  n: number,
  signal: AbortSignal,
): Promise<void> {
  for (let round = 0; round < n && !signal.aborted; round++) {
    for (let k = 0; k < lanes.length; k++) {
      await timeOnce(lanes[(round + k) % lanes.length] as FanOutLane);
    }
  }
}

/** The same lanes with samples that are thrown away: the untimed writes before the timed. */
export function warmUpLanes(lanes: readonly FanOutLane[]): FanOutLane[] {
  return lanes.map((lane) => ({ ...lane, samples: emptyFanOut() }));
}

export type FanOutPath =
  | 'service'
  | 'bare socket.io room emit'
  | 'bare socket.io emit per socket'
  | "bare socket.io emit per socket, the service's event";

/** What one path measured on one driver's server (the floor: beside it), filled in as it goes. */
export interface FanOutFigure {
  driver: DriverKind;
  path: FanOutPath;
  receivers: number;
  /** Sockets connected to that server in all, the receivers included. */
  connected: number;
  samples: FanOutSamples;
}

/** POSTs JSON (with a token, when given) and answers the parsed reply, or throws on another status. */
export async function postJson<T>(
  url: string,
  body: unknown,
  token: string | undefined,
  status: number,
): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== status) {
    throw new Error(`POST ${new URL(url).pathname} answered ${response.status}: ${text}`);
  }
  return JSON.parse(text) as T;
}

/** The service on one driver with agents signed up over HTTP and connected by socket.io. */
export interface Crowd {
  kind: DriverKind;
  server: TestServer;
  tokens: string[];
  /** clients[i] is connected with tokens[i]. */
  clients: PushClient[];
  close(): Promise<void>;
}

/**
 * Why this driver cannot be measured here, or null. The test server runs on PostgreSQL whenever
 * DATABASE_URL is set, so PGlite needs it unset (BENCH_DATABASE_URL serves the bench instead).
 */
export function crowdSkipReason(kind: DriverKind, databaseUrl: string | undefined): string | null {
  if (kind === 'postgres' && !databaseUrl) {
    return 'neither BENCH_DATABASE_URL nor DATABASE_URL is set';
  }
  if (kind === 'pglite' && TEST_DATABASE_URL) {
    return 'DATABASE_URL sends every test server to PostgreSQL; set BENCH_DATABASE_URL instead';
  }
  return null;
}

/**
 * A real server (uWS engine) on a fresh database of the driver, `size` agents signed up and
 * connected, each socket past its replayed welcome. Closing drops the scratch database.
 */
export async function openCrowd(
  kind: DriverKind,
  size: number,
  databaseUrl: string | undefined,
  log: (line: string) => void,
  serverLog: (message: string) => void,
): Promise<Crowd> {
  const scratch = kind === 'postgres' ? await scratchDatabase(databaseUrl as string) : null;
  let server: TestServer | null = null;
  let clients: PushClient[] = [];
  const close = async () => {
    closeAll(clients);
    await server?.close();
    await scratch?.drop();
  };
  try {
    server = await startBenchServer({
      httpEngine: 'uws',
      log: serverLog,
      ...(scratch ? { databaseUrl: scratch.url } : {}),
    });
    if (server.services.driver.kind !== kind) {
      throw new Error(`the test server runs on ${server.services.driver.kind}, not ${kind}`);
    }
    let started = performance.now();
    const tokens = await signUpMany(server, size, SET_UP_CONCURRENCY);
    log(`${kind}: signed up ${tokens.length} agents in ${seconds(started)}`);
    started = performance.now();
    clients = await connectMany(server.baseUrl, tokens, SET_UP_CONCURRENCY, true);
    log(`${kind}: connected ${clients.length} sockets in ${seconds(started)}`);
    return { kind, server, tokens, clients, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}

const seconds = (started: number) => `${((performance.now() - started) / 1000).toFixed(1)} s`;

/** The token a floor client connects with to join the small room as well as `all`. */
const SMALL_ROOM = 'room';

/**
 * socket.io on uWS, nothing else. Every socket joins `all`; those whose auth token is `room`
 * join `room` too. `POST /emit?room=<room>` emits a `change` carrying a new id to the room
 * (with `&each=1`, once per socket of the room) and answers `{id}`. `POST /shape` takes an event
 * (JSON) that `&shaped=1` emits instead, with its type and new id set: the bytes the service
 * pushed, so that the floor's sockets and clients carry and parse as much.
 */
async function startFloorServer(): Promise<Baseline> {
  const uws = loadUws();
  if (!uws) throw new Error('uWebSockets.js cannot load on this Node.js');
  const app = uws.App();
  const io = new SocketIoServer({ serveClient: false });
  io.attachApp(app);
  io.on('connection', (socket) => {
    void socket.join('all');
    if ((socket.handshake.auth as { token?: unknown }).token === SMALL_ROOM) {
      void socket.join(SMALL_ROOM);
    }
  });
  let shape: { data?: Record<string, unknown> } = {};
  app.post('/shape', (res) => {
    let body = Buffer.alloc(0);
    res.onAborted(() => {});
    res.onData((chunk, isLast) => {
      body = Buffer.concat([body, Buffer.from(chunk)]);
      if (!isLast) return;
      shape = JSON.parse(body.toString('utf8')) as typeof shape;
      res.cork(() => res.writeStatus('204 No Content').end());
    });
  });
  app.post('/emit', (res, req) => {
    const room = req.getQuery('room') || 'all';
    const each = req.getQuery('each') === '1';
    const id = randomUUID();
    const event =
      req.getQuery('shaped') === '1'
        ? { ...shape, type: 'bench.fan-out', data: { ...shape.data, id } }
        : { type: 'bench.fan-out', data: { id } };
    if (each) {
      for (const socketId of io.of('/').adapter.rooms.get(room) ?? []) {
        io.of('/').sockets.get(socketId)?.emit('change', event);
      }
    } else io.to(room).emit('change', event);
    res.cork(() =>
      res
        .writeStatus('202 Accepted')
        .writeHeader('content-type', 'application/json')
        .end(JSON.stringify({ id })),
    );
  });
  const listening = await new Promise<uWS.us_listen_socket>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (socket) =>
      socket ? resolve(socket) : reject(new Error('the floor cannot listen')),
    ),
  );
  return {
    baseUrl: `http://127.0.0.1:${uws.us_socket_local_port(listening)}`,
    async close() {
      io.disconnectSockets(true);
      // Also puts socket.io's Adapter back as it was before attachApp patched it.
      await io.close();
      uws.us_listen_socket_close(listening);
    },
  };
}

/** The floor with its sockets connected: lanes of each kind of emit, for timeInTurns. */
export interface Floor {
  sockets: number;
  roomSize: number;
  /** One room emit reaching every socket. */
  roomToAll(samples: FanOutSamples): FanOutLane;
  /** One emit per socket, to every socket. */
  emitToEach(samples: FanOutSamples): FanOutLane;
  /** The same with the event given to `shape` (a tiny one until then). */
  emitShapedToEach(samples: FanOutSamples): FanOutLane;
  /** The event `emitShapedToEach` sends from now on (its type and id replaced). */
  shape(event: object): Promise<void>;
  /** One room emit to the `roomSize` sockets of the small room. */
  smallRoom(samples: FanOutSamples): FanOutLane;
  close(): Promise<void>;
}

const floorKey: KeyOf = (event) =>
  event.type === 'bench.fan-out' ? (event.data?.id as string | undefined) : undefined;

/**
 * The floor, `sockets` clients of which `roomSize` are in the small room. Open it after every
 * other socket.io server of the measurement has started, and start none while it is open: a
 * room emit publishes on the uWS app that last attached socket.io (socket.io's uWS adapter
 * patch is one for the whole process).
 */
export async function openFloor(sockets: number, roomSize: number): Promise<Floor> {
  const server = await startFloorServer();
  let clients: PushClient[] = [];
  try {
    const tokens = Array.from({ length: sockets }, (_, i) => (i < roomSize ? SMALL_ROOM : 'all'));
    clients = await connectMany(server.baseUrl, tokens, SET_UP_CONCURRENCY, false);
  } catch (error) {
    await server.close();
    throw error;
  }
  const everyone = new Arrivals(
    clients.map((client) => client.socket),
    floorKey,
  );
  const members = clients.slice(0, roomSize);
  const inRoom = new Arrivals(
    members.map((client) => client.socket),
    floorKey,
  );
  const emit =
    (query: string): Write =>
    async () =>
      (await postJson<{ id: string }>(`${server.baseUrl}/emit?${query}`, {}, undefined, 202)).id;
  const lane =
    (query: string, arrivals: Arrivals, receivers: number) => (samples: FanOutSamples) => ({
      write: emit(query),
      arrivals,
      receivers,
      samples,
    });
  return {
    sockets: clients.length,
    roomSize: members.length,
    roomToAll: lane('room=all', everyone, clients.length),
    emitToEach: lane('room=all&each=1', everyone, clients.length),
    emitShapedToEach: lane('room=all&each=1&shaped=1', everyone, clients.length),
    async shape(event) {
      const answer = await fetch(`${server.baseUrl}/shape`, {
        method: 'POST',
        body: JSON.stringify(event),
      });
      if (answer.status !== 204) throw new Error(`the floor's /shape answered ${answer.status}`);
    },
    smallRoom: lane(`room=${SMALL_ROOM}`, inRoom, members.length),
    async close() {
      everyone.detach();
      inRoom.detach();
      closeAll(clients);
      await server.close();
    },
  };
}
