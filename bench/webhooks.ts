/**
 * Webhook delivery: 10,000 changes to 100 endpoints on loopback. 100 agents each set a webhook
 * to an endpoint of their own (a node:http server on 127.0.0.1) and each makes 100 changes with
 * test_webhook, all agents at once (one request in flight per agent); every change is a signed
 * POST to its endpoint. Figures: deliveries per second (first change made to last delivery
 * received) and the time from the change's commit to its receipt (timed from the start of the
 * test_webhook request that commits it, so it includes that request's own time). Beside it, in
 * the same run, the baseline: a bare loop of HTTP POSTs of the same size to the same endpoints
 * (one in flight per endpoint, 100 at once, kept-alive connections), timed per POST.
 */
import { createServer, Agent, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { startBenchServer } from './bench-server.ts';
import { ms, summarize, type LatencySummary } from './stats.ts';

export const WEBHOOK_ENDPOINTS = 100;
export const WEBHOOK_CHANGES = 10_000;
/** A delivery that has not arrived this long after the last change was made counts as missing. */
const DRAIN_LIMIT_MS = 120_000;

export interface WebhooksFigure {
  changes: number;
  endpoints: number;
  perSecond: number;
  /** Changes committed per second by the test_webhook requests (what deliveries follow). */
  madePerSecond: number;
  latency: LatencySummary | null;
  missing: number;
  baselinePerSecond: number;
  baselineLatency: LatencySummary | null;
}

interface Endpoints {
  urls: string[];
  /** Called with each request's `webhook-id` header (or null) when its body has arrived. */
  onReceipt: (id: string | null) => void;
  close(): Promise<void>;
}

async function startEndpoints(count: number): Promise<Endpoints> {
  const servers: Server[] = [];
  const endpoints: Endpoints = {
    urls: [],
    onReceipt: () => undefined,
    close: async () => {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
  for (let i = 0; i < count; i++) {
    const server = createServer((req, res) => {
      req.on('data', () => undefined);
      req.on('end', () => {
        const id = req.headers['webhook-id'];
        endpoints.onReceipt(typeof id === 'string' ? id : null);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    endpoints.urls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`);
  }
  return endpoints;
}

/** The bare loop: `perEndpoint` POSTs of `body` to each URL, one in flight per URL. */
async function barePosts(
  urls: readonly string[],
  perEndpoint: number,
  body: string,
  signal: AbortSignal,
): Promise<{ perSecond: number; latency: LatencySummary | null }> {
  const agent = new Agent({ keepAlive: true });
  const samples: number[] = [];
  const post = (url: string) =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        url,
        {
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
          },
        },
        (res) => {
          res.on('end', resolve);
          res.resume();
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const start = performance.now();
  await Promise.all(
    urls.map(async (url) => {
      for (let i = 0; i < perEndpoint && !signal.aborted; i++) {
        const started = performance.now();
        await post(url);
        samples.push(performance.now() - started);
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  agent.destroy();
  return { perSecond: samples.length / seconds, latency: summarize(samples) };
}

export async function measureWebhooks(
  signal: AbortSignal,
  serverLog: (message: string) => void,
): Promise<WebhooksFigure> {
  const perEndpoint = WEBHOOK_CHANGES / WEBHOOK_ENDPOINTS;
  const endpoints = await startEndpoints(WEBHOOK_ENDPOINTS);
  const server = await startBenchServer({ webhookAllowPrivate: true, log: serverLog });
  try {
    const agents = [];
    for (const url of endpoints.urls) {
      const agent = await server.signUp();
      const set = await fetch(server.url('/whoami/webhook'), {
        method: 'PUT',
        headers: { authorization: `Bearer ${agent.api_token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url }),
      });
      if (set.status !== 200) throw new Error(`set_webhook: ${set.status} ${await set.text()}`);
      agents.push(agent);
    }

    // The baseline, on the same endpoints, with a body the size of a delivery's.
    const sampleBody = JSON.stringify({
      type: 'webhook.test',
      timestamp: new Date().toISOString(),
      data: {
        event_id: crypto.randomUUID(),
        cursor: 'c1',
        type: 'webhook.test',
        at: new Date().toISOString(),
        data: { url: endpoints.urls[0], message: 'A test delivery, as asked with test_webhook.' },
      },
    });
    const baseline = await barePosts(endpoints.urls, perEndpoint, sampleBody, signal);

    const started = new Map<string, number>();
    const received = new Map<string, number>();
    let allReceived: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (allReceived = resolve));
    endpoints.onReceipt = (id) => {
      if (id === null || received.has(id)) return;
      received.set(id, performance.now());
      if (received.size >= WEBHOOK_CHANGES) allReceived();
    };
    const start = performance.now();
    await Promise.all(
      agents.map(async (agent) => {
        for (let i = 0; i < perEndpoint && !signal.aborted; i++) {
          const requested = performance.now();
          const answer = await fetch(server.url('/whoami/webhook/test'), {
            method: 'POST',
            headers: { authorization: `Bearer ${agent.api_token}` },
          });
          const { delivery_id } = (await answer.json()) as { delivery_id: string };
          started.set(delivery_id, requested);
        }
      }),
    );
    const made = (performance.now() - start) / 1000;
    await Promise.race([
      done,
      new Promise((resolve) => setTimeout(resolve, DRAIN_LIMIT_MS).unref()),
    ]);
    const last = Math.max(...received.values());
    const samples: number[] = [];
    for (const [id, at] of received) {
      const from = started.get(id);
      if (from !== undefined) samples.push(at - from);
    }
    return {
      changes: started.size,
      endpoints: WEBHOOK_ENDPOINTS,
      perSecond: received.size / ((last - start) / 1000),
      madePerSecond: started.size / made,
      latency: summarize(samples),
      missing: started.size - received.size,
      baselinePerSecond: baseline.perSecond,
      baselineLatency: baseline.latency,
    };
  } finally {
    await server.close();
    await endpoints.close();
  }
}

export function webhooksLines(figure: WebhooksFigure | null, skipped: string | null): string[] {
  const lines = [
    '',
    `Webhook delivery (bench/webhooks.ts): ${WEBHOOK_CHANGES.toLocaleString('en-US')} changes (test_webhook, 100 agents at once) to`,
    `${WEBHOOK_ENDPOINTS} endpoints on loopback, each signed (HMAC + Ed25519) and POSTed in order; time from the`,
    "change's commit (the start of its request) to its receipt. Baseline: a bare loop of POSTs of the",
    'same size to the same endpoints, one in flight per endpoint.',
  ];
  if (!figure) {
    lines.push(skipped ? `skipped: ${skipped}` : '(no figures)');
    return lines;
  }
  lines.push(
    `- service: ${figure.perSecond.toFixed(0)} deliveries/s (changes made at ${figure.madePerSecond.toFixed(0)}/s); commit to receipt p50 ${ms(figure.latency?.p50)}, p99 ${ms(figure.latency?.p99)}, max ${ms(figure.latency?.max)}; ${figure.missing} missing`,
    `- bare POST loop: ${figure.baselinePerSecond.toFixed(0)} POSTs/s; per POST p50 ${ms(figure.baselineLatency?.p50)}, p99 ${ms(figure.baselineLatency?.p99)}`,
  );
  return lines;
}

export function webhooksRatios(figure: WebhooksFigure | null): string[] {
  if (!figure) return ['webhook delivery: not measured'];
  return [
    `webhook delivery: ${figure.perSecond.toFixed(0)}/s beside ${figure.baselinePerSecond.toFixed(0)}/s bare POSTs (${(figure.perSecond / figure.baselinePerSecond).toFixed(2)} of it); p99 commit to receipt ${ms(figure.latency?.p99)} beside ${ms(figure.baselineLatency?.p99)} per bare POST`,
  ];
}
