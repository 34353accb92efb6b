import { performance } from 'node:perf_hooks';
import type { TestServer } from '../test/helpers/server.ts';
import type { PushClient } from './clients.ts';

/** A change later than this is counted lost, so one missing push cannot hang the run. */
const LOST_AFTER_MS = 5_000;
/** A long-poll that has not parked after this many event-loop turns is given up on. */
const PARK_TURNS = 100_000;

/**
 * Filled in as the loop runs, so the overall timeout can still print what was measured.
 * `fromResponse` starts when fetch resolved and counts a push that beat the answer as 0;
 * `fromStart` starts when the POST was sent.
 */
export interface PushSamples {
  fromResponse: number[];
  fromStart: number[];
  /** The POST's own round trip, for scale. */
  post: number[];
  /** Pushes that arrived before the POST's answer. */
  early: number;
  lost: number;
}

export function emptySamples(): PushSamples {
  return { fromResponse: [], fromStart: [], post: [], early: 0, lost: 0 };
}

function record(samples: PushSamples, start: number, answered: number, arrived: number | null) {
  samples.post.push(answered - start);
  if (arrived === null) {
    samples.lost++;
    return;
  }
  if (arrived < answered) samples.early++;
  samples.fromResponse.push(Math.max(0, arrived - answered));
  samples.fromStart.push(arrived - start);
}

async function postJson(url: string, body: unknown, headers: Record<string, string>) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== 202) throw new Error(`POST ${url} answered ${response.status}: ${text}`);
  return (JSON.parse(text) as { feedback_id: string }).feedback_id;
}

export type Poster = () => Promise<string>;

/** The service's write: feedback from the sender, whose own feed gets `feedback.received`. */
export function feedbackPoster(server: TestServer, token: string): Poster {
  const body = { message: 'bench: write-to-push latency', category: 'other' };
  return () => postJson(server.url('/feedback'), body, { authorization: `Bearer ${token}` });
}

/** The baseline's write: an empty POST that makes the server emit to the named socket. */
export function emitPoster(baseUrl: string, socketId: string): Poster {
  return () => postJson(`${baseUrl}/emit`, {}, { 'x-socket': socketId });
}

/** N writes one after another, each timed until its change reaches the sender's socket. */
export async function timeSocketPushes(
  sender: PushClient,
  post: Poster,
  n: number,
  samples: PushSamples,
): Promise<void> {
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    const id = await post();
    const answered = performance.now();
    record(samples, start, answered, await sender.arrival(id, LOST_AFTER_MS));
  }
}

interface WaitAnswer {
  changes: { data?: { feedback_id?: unknown } }[];
}

/**
 * N rounds of: park `GET /changes/wait`, write once it is parked, time until the long-poll
 * answers. The waiter
 * must have read its feed up to date first, or the wait answers at once with old events.
 */
export async function timeLongPolls(
  server: TestServer,
  token: string,
  n: number,
  samples: PushSamples,
): Promise<void> {
  const auth = { authorization: `Bearer ${token}` };
  const post = feedbackPoster(server, token);
  const me = (await (await fetch(server.url('/whoami'), { headers: auth })).json()) as {
    agent_id: string;
  };
  // The server runs in this process: its hub says when the long-poll has parked.
  const parked = async () => {
    for (let turn = 0; turn < PARK_TURNS; turn++) {
      if (server.services.hub.listenerCount(me.agent_id) > 0) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  // Reading the feed moves the remembered place past the welcome, so waits start empty.
  const drained = await fetch(server.url('/changes?limit=500'), { headers: auth });
  if (drained.status !== 200) throw new Error(`GET /changes answered ${drained.status}`);
  await drained.arrayBuffer();
  for (let i = 0; i < n; i++) {
    const waiting = fetch(server.url('/changes/wait?timeout=30'), {
      headers: auth,
      signal: AbortSignal.timeout(LOST_AFTER_MS),
    })
      .then(async (response) => {
        const answer = (await response.json()) as WaitAnswer;
        return { answer, at: performance.now() };
      })
      .catch(() => ({ answer: { changes: [] } as WaitAnswer, at: 0 }));
    await parked();
    const start = performance.now();
    const id = await post();
    const answered = performance.now();
    const { answer, at } = await waiting;
    const found = answer.changes.some((change) => change.data?.feedback_id === id);
    record(samples, start, answered, found ? at : null);
  }
}
