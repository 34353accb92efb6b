import { performance } from 'node:perf_hooks';
import { io, type Socket } from 'socket.io-client';
import type { TestServer } from '../test/helpers/server.ts';

/** Runs `task` for 0..n-1 with at most `limit` in flight, so set-up never floods the server. */
export async function bounded<T>(
  n: number,
  limit: number,
  task: (i: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = new Array<T>(n);
  let next = 0;
  const lane = async () => {
    while (next < n) {
      const i = next++;
      results[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, n) }, lane));
  return results;
}

export async function signUpMany(server: TestServer, n: number, limit: number): Promise<string[]> {
  return bounded(n, limit, async (i) => (await server.signUp(`bench agent ${i}`)).api_token);
}

/**
 * A socket.io client that records when each `change` arrives, by `data.feedback_id`, whether
 * or not anyone waits for it yet: the push can beat the HTTP answer.
 */
export class PushClient {
  private readonly arrived = new Map<string, number>();
  private readonly waiting = new Map<string, (at: number) => void>();

  constructor(readonly socket: Socket) {
    socket.on('change', (event: { data?: { feedback_id?: unknown } }) => {
      const at = performance.now();
      const id = event.data?.feedback_id;
      if (typeof id !== 'string') return;
      const waiter = this.waiting.get(id);
      if (waiter) {
        this.waiting.delete(id);
        waiter(at);
      } else this.arrived.set(id, at);
    });
  }

  /** When the change for `id` arrived, or null if it has not within `timeoutMs`. */
  arrival(id: string, timeoutMs: number): Promise<number | null> {
    const at = this.arrived.get(id);
    if (at !== undefined) {
      this.arrived.delete(id);
      return Promise.resolve(at);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(null);
      }, timeoutMs);
      this.waiting.set(id, (arrivedAt) => {
        clearTimeout(timer);
        resolve(arrivedAt);
      });
    });
  }
}

/**
 * Connects one client. With `welcomes`, it is ready once its first `change` (the replayed
 * `agent.welcome`) has arrived, so no replay is in flight while we measure.
 */
function connect(
  baseUrl: string,
  token: string | undefined,
  welcomes: boolean,
): Promise<PushClient> {
  // forceNew: one connection per client; otherwise the client multiplexes all onto one.
  const socket = io(baseUrl, {
    auth: token ? { token } : {},
    transports: ['websocket'],
    forceNew: true,
    reconnection: false,
    timeout: 20_000,
  });
  const client = new PushClient(socket);
  return new Promise((resolve, reject) => {
    socket.once('connect_error', (error) => {
      socket.close();
      reject(error);
    });
    if (welcomes) socket.once('change', () => resolve(client));
    else socket.once('connect', () => resolve(client));
  });
}

/** Connects all, or closes those that did connect and throws. */
export async function connectMany(
  baseUrl: string,
  tokens: readonly (string | undefined)[],
  limit: number,
  welcomes: boolean,
): Promise<PushClient[]> {
  const open: PushClient[] = [];
  try {
    return await bounded(tokens.length, limit, async (i) => {
      const client = await connect(baseUrl, tokens[i], welcomes);
      open.push(client);
      return client;
    });
  } catch (error) {
    closeAll(open);
    throw error;
  }
}

export function closeAll(clients: readonly PushClient[]): void {
  for (const client of clients) client.socket.close();
}
