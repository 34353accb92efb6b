import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newChanges } from '../helpers/changes.ts';
import { request } from '../helpers/http.ts';
import { onTestsEnd } from '../helpers/resources.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * A webhook receiver written from /protocol alone verifies the signatures: the receiver code
 * block of the served document, written to a file as it stands and run by node as a program
 * (as a reader who pasted it would), receives the real deliveries of set_webhook and refuses
 * what it must (a changed body, an old timestamp, a foreign key).
 */

/** The first line of the receiver's code block in /protocol: how the test finds it. */
const RECEIVER_MARKER = '// webhook-receiver.mjs';
/** How long a step may take before the test says what it waited for (a deadline, not a sleep). */
const DEADLINE_MS = 20_000;

interface Printed {
  webhook_id: string;
  type: string;
  data: unknown;
}

/** The doc's receiver run as a program: what it prints, one event per line. */
interface DocReceiver {
  url: string;
  printed: Printed[];
  refusals: string[];
  /** Resolves once `count` events were printed (fails past the deadline or if node exits). */
  printedAtLeast(count: number): Promise<Printed[]>;
  stop(): Promise<void>;
}

/** One request as the webhook's endpoint received it, and what the doc's receiver answered. */
interface Delivery {
  headers: Record<string, string>;
  body: Buffer;
  answered: number;
}

/** The endpoint set_webhook names: records each delivery and hands it on to the receiver. */
interface Relay {
  url: string;
  deliveries: Delivery[];
  target: string | null;
  /** Resolves once `count` deliveries were answered (fails past the deadline). */
  answeredAtLeast(count: number): Promise<Delivery[]>;
}

const test = suite<{ server: TestServer; source: string; dir: string }>(
  'a webhook receiver written from /protocol alone',
);

function deadline<T>(what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`waited ${DEADLINE_MS} ms for ${what}`)),
      DEADLINE_MS,
    );
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** The receiver code block of the served /protocol, exactly as served. */
function receiverBlock(protocol: string): string {
  for (const match of protocol.matchAll(/```(?:js|javascript)\n([\s\S]*?)```/g)) {
    const code = match[1] as string;
    if (code.startsWith(RECEIVER_MARKER)) return code;
  }
  throw new Error(`/protocol holds no js code block starting with ${RECEIVER_MARKER}`);
}

async function startDocReceiver(
  file: string,
  env: { WEBHOOK_SECRET?: string; SERVICE_URL?: string },
): Promise<DocReceiver> {
  const child: ChildProcess = spawn(process.execPath, [file], {
    env: { PATH: process.env.PATH, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const printed: Printed[] = [];
  const refusals: string[] = [];
  const waiters: (() => void)[] = [];
  let stdout = '';
  let stderr = '';
  let exited = false;
  let listening: (url: string) => void = () => undefined;
  const url = new Promise<string>((resolve) => (listening = resolve));
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    const lines = stdout.split('\n');
    stdout = lines.pop() as string;
    for (const line of lines) {
      const found = /^listening on (http:\/\/\S+)$/.exec(line);
      if (found) listening(found[1] as string);
      else printed.push(JSON.parse(line) as Printed);
    }
    for (const wake of waiters.splice(0)) wake();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    refusals.splice(0, refusals.length, ...stderr.split('\n').filter(Boolean));
  });
  const gone = new Promise<never>((_, reject) =>
    child.once('exit', (code) => {
      exited = true;
      reject(new Error(`the receiver exited (${code}): ${stderr}`));
    }),
  );
  gone.catch(() => undefined);
  onTestsEnd(async () => void child.kill());
  return {
    url: await deadline('the receiver to listen', Promise.race([url, gone])),
    printed,
    refusals,
    async printedAtLeast(count) {
      const enough = async () => {
        while (printed.length < count) {
          if (exited) throw new Error(`the receiver exited: ${stderr}`);
          await new Promise<void>((wake) => waiters.push(wake));
        }
        return printed;
      };
      return deadline(`${count} events from the receiver (${stderr})`, enough());
    },
    async stop() {
      if (!exited) {
        child.kill();
        await gone.catch(() => undefined);
      }
    },
  };
}

const WEBHOOK_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'webhook-key-id'];

function webhookHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const kept: Record<string, string> = { 'content-type': 'application/json' };
  for (const name of WEBHOOK_HEADERS) {
    const value = headers[name];
    if (typeof value === 'string') kept[name] = value;
  }
  return kept;
}

/** Sends one (perhaps altered) delivery to the receiver as the service would; the status. */
async function deliver(receiverUrl: string, headers: Record<string, string>, body: Buffer) {
  const response = await fetch(receiverUrl, {
    method: 'POST',
    headers,
    body: new Uint8Array(body),
  });
  await response.body?.cancel();
  return response.status;
}

async function startRelay(): Promise<Relay & { server: Server }> {
  const waiters: (() => void)[] = [];
  const relay: Relay = {
    url: '',
    deliveries: [],
    target: null,
    answeredAtLeast(count) {
      const enough = async () => {
        while (relay.deliveries.length < count) {
          await new Promise<void>((wake) => waiters.push(wake));
        }
        return relay.deliveries;
      };
      return deadline(`${count} deliveries at the relay`, enough());
    },
  };
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const headers = webhookHeaders(incoming.headers);
      const body = Buffer.concat(chunks);
      const handOn =
        relay.target === null
          ? Promise.resolve(503)
          : deliver(relay.target, headers, body).catch(() => 502);
      void handOn.then((answered) => {
        relay.deliveries.push({ headers, body, answered });
        for (const wake of waiters.splice(0)) wake();
        outgoing.writeHead(answered).end();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestsEnd(async () => void server.close());
  relay.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return Object.assign(relay, { server });
}

/** An agent whose webhook reaches the doc's receiver through a relay; its secret and feed. */
async function agentWithReceiver(
  context: { server: TestServer; source: string; dir: string },
  check: 'hmac' | 'both',
) {
  const { server } = context;
  const agent = await server.signUp();
  await newChanges(server, agent); // the feed read to its end: what follows is news
  const relay = await startRelay();
  const set = await request<{ url: string; events: string[] | null; secret: string }>(
    server,
    'PUT',
    '/whoami/webhook',
    { token: agent.api_token, body: { url: relay.url } },
  );
  assert.is(set.status, 200, JSON.stringify(set.body));
  assert.match(set.body.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
  const file = join(context.dir, `webhook-receiver-${check}.mjs`);
  writeFileSync(file, context.source);
  const receiver = await startDocReceiver(
    file,
    check === 'hmac'
      ? { WEBHOOK_SECRET: set.body.secret }
      : { WEBHOOK_SECRET: set.body.secret, SERVICE_URL: server.baseUrl },
  );
  relay.target = receiver.url;
  return { agent, relay, receiver, secret: set.body.secret };
}

/** Changes that reach the agent's feed (and so its webhook): a ping, a workspace and a save. */
async function makeChanges(server: TestServer, agent: { agent_id: string; api_token: string }) {
  const ping = await request<{ delivery_id: string }>(server, 'POST', '/whoami/webhook/test', {
    token: agent.api_token,
  });
  assert.is(ping.status, 202, JSON.stringify(ping.body));
  const workspaceId = await newWorkspace(server, agent);
  await saveFile(server, agent, workspaceId, 'notes/plan.md', '# A plan\n');
  return ping.body.delivery_id;
}

/** The deliveries of a real webhook reach the receiver, each verified and printed once. */
async function assertGenuineDeliveriesPrinted(
  server: TestServer,
  setUp: Awaited<ReturnType<typeof agentWithReceiver>>,
) {
  const { agent, relay, receiver } = setUp;
  const deliveryId = await makeChanges(server, agent);
  const feed = await newChanges(server, agent);
  assert.ok(
    feed.some((change) => change.event_id === deliveryId && change.type === 'webhook.test'),
    'test_webhook appends webhook.test to the feed, its event_id the delivery id',
  );
  assert.ok(feed.some((change) => change.type === 'file.saved'));
  const printed = await receiver.printedAtLeast(feed.length);
  await relay.answeredAtLeast(feed.length);
  assert.equal(
    printed.map((event) => [event.webhook_id, event.type]),
    feed.map((change) => [change.event_id, change.type]),
    'every change of the feed, in order, once, under its event_id',
  );
  for (const [index, event] of printed.entries()) {
    assert.equal(event.data, JSON.parse(JSON.stringify(feed[index])), 'data is the feed event');
  }
  assert.ok(relay.deliveries.every((delivery) => delivery.answered === 204));
  assert.equal(receiver.refusals, []);
}

test.before(async (context) => {
  // The receiver runs on this machine: a loopback address, refused unless private ones are allowed.
  context.server = await startTestServer({ webhookAllowPrivate: true });
  context.dir = mkdtempSync(join(tmpdir(), 'webhook-receiver-'));
  onTestsEnd(async () => rmSync(context.dir, { recursive: true, force: true }));
  const protocol = await (await context.server.get('/protocol')).text();
  context.source = receiverBlock(protocol);
});
test.after(async ({ server }) => {
  await server.close();
});

test('the receiver of /protocol, run as pasted with the secret, verifies the HMAC (v1) of every real delivery', async (context) => {
  const setUp = await agentWithReceiver(context, 'hmac');
  await assertGenuineDeliveriesPrinted(context.server, setUp);
  await setUp.receiver.stop();
});

test('the receiver of /protocol, run as pasted with the secret and the service URL, verifies both the HMAC (v1) and the Ed25519 (v1a) signature of every real delivery, against /.well-known/service-keys.json', async (context) => {
  const setUp = await agentWithReceiver(context, 'both');
  const keys = (await (await context.server.get('/.well-known/service-keys.json')).json()) as {
    keys: { kid: string }[];
  };
  await assertGenuineDeliveriesPrinted(context.server, setUp);
  for (const delivery of setUp.relay.deliveries) {
    assert.match(delivery.headers['webhook-signature'] ?? '', /^v1,\S+ v1a,\S+$/);
    assert.ok(keys.keys.some((key) => key.kid === delivery.headers['webhook-key-id']));
  }
  await setUp.receiver.stop();
});

test('the receiver refuses a genuine delivery with its body changed, its timestamp moved, or its signature gone, and handles a repeated webhook-id once', async (context) => {
  for (const check of ['hmac', 'both'] as const) {
    const setUp = await agentWithReceiver(context, check);
    const { receiver, relay, agent } = setUp;
    const ping = await request(context.server, 'POST', '/whoami/webhook/test', {
      token: agent.api_token,
    });
    assert.is(ping.status, 202);
    const genuine = (await relay.answeredAtLeast(1))[0] as Delivery;
    assert.is(genuine.answered, 204);
    const changed = Buffer.from(genuine.body.toString().replace('webhook.test', 'webhook.tesT'));
    assert.is(await deliver(receiver.url, genuine.headers, changed), 401, `${check}: body changed`);
    const moved = String(Number(genuine.headers['webhook-timestamp']) + 1);
    assert.is(
      await deliver(receiver.url, { ...genuine.headers, 'webhook-timestamp': moved }, genuine.body),
      401,
      `${check}: timestamp moved`,
    );
    const [v1, v1a] = (genuine.headers['webhook-signature'] as string).split(' ');
    for (const signature of ['v1,', v1a, ...(check === 'both' ? [v1] : [])]) {
      const partial = { ...genuine.headers, 'webhook-signature': signature as string };
      assert.is(await deliver(receiver.url, partial, genuine.body), 401, `${check}: ${signature}`);
    }
    // The same delivery again (a retry whose answer was lost): acknowledged, not handled twice.
    assert.is(await deliver(receiver.url, genuine.headers, genuine.body), 204, `${check}: again`);
    // The receiver prints in order: the next real delivery comes right after the first.
    const next = await request<{ delivery_id: string }>(
      context.server,
      'POST',
      '/whoami/webhook/test',
      { token: agent.api_token },
    );
    const printed = await receiver.printedAtLeast(2);
    assert.equal(
      printed.map((event) => event.webhook_id),
      [genuine.headers['webhook-id'], next.body.delivery_id],
      `${check}: nothing refused was handled, the repeated delivery was handled once`,
    );
    await receiver.stop();
  }
});

test('the receiver takes what the standardwebhooks library signs with the secret, and refuses it when stale or signed by another secret', async (context) => {
  const { receiver, secret } = await agentWithReceiver(context, 'hmac');
  const library = new Webhook(secret);
  const body = JSON.stringify({
    type: 'webhook.test',
    timestamp: new Date().toISOString(),
    data: { note: 'signé par la bibliothèque' },
  });
  const signedAt = (date: Date, by: Webhook, id: string) => ({
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(date.getTime() / 1000)),
    'webhook-signature': by.sign(id, date, body),
  });
  const now = new Date();
  const tenMinutesAgo = new Date(now.getTime() - 10 * 60_000);
  const inTenMinutes = new Date(now.getTime() + 10 * 60_000);
  const stranger = new Webhook(`whsec_${randomBytes(32).toString('base64')}`);
  assert.is(
    await deliver(receiver.url, signedAt(tenMinutesAgo, library, 'old'), Buffer.from(body)),
    401,
  );
  assert.is(
    await deliver(receiver.url, signedAt(inTenMinutes, library, 'new'), Buffer.from(body)),
    401,
  );
  assert.is(await deliver(receiver.url, signedAt(now, stranger, 'alien'), Buffer.from(body)), 401);
  assert.is(await deliver(receiver.url, signedAt(now, library, 'fresh'), Buffer.from(body)), 204);
  const printed = await receiver.printedAtLeast(1);
  assert.equal(printed, [
    { webhook_id: 'fresh', type: 'webhook.test', data: JSON.parse(body).data },
  ]);
  await receiver.stop();
});

test("the receiver checks v1a against the service's keys, and needs the secret: v1a alone does not say whose a delivery is", async (context) => {
  const { server, dir, source } = context;
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const file = join(dir, 'webhook-receiver-keys.mjs');
  writeFileSync(file, source);
  const receiver = await startDocReceiver(file, {
    WEBHOOK_SECRET: secret,
    SERVICE_URL: server.baseUrl,
  });
  const current = await server.services.files.signingKeys.current(server.services.db());
  const body = Buffer.from(JSON.stringify({ type: 'webhook.test', timestamp: 'x', data: {} }));
  const signedBy = (key: KeyObject, kid: string, id: string) => {
    const now = new Date();
    const timestamp = String(Math.floor(now.getTime() / 1000));
    const ed25519 = sign(null, Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body]), key);
    return {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': timestamp,
      'webhook-signature': `${new Webhook(secret).sign(id, now, body)} v1a,${ed25519.toString('base64')}`,
      'webhook-key-id': kid,
    };
  };
  const foreign = generateKeyPairSync('ed25519').privateKey;
  assert.is(await deliver(receiver.url, signedBy(foreign, current.kid, 'forged'), body), 401);
  const unknownKid = signedBy(current.privateKey, 'no-such-kid', 'unknown-kid');
  assert.is(await deliver(receiver.url, unknownKid, body), 401);
  assert.is(
    await deliver(receiver.url, signedBy(current.privateKey, current.kid, 'ours'), body),
    204,
  );
  assert.equal(
    (await receiver.printedAtLeast(1)).map((event) => event.webhook_id),
    ['ours'],
  );
  await receiver.stop();
  // Without the secret, the receiver takes nothing, though the service's own key signed it.
  const keysOnly = await startDocReceiver(file, { SERVICE_URL: server.baseUrl });
  const signed = signedBy(current.privateKey, current.kid, 'v1a-only');
  assert.is(await deliver(keysOnly.url, signed, body), 401);
  await keysOnly.stop();
});

test("a genuine delivery of another agent's webhook, signed by the service's key, is refused: v1 binds it to one webhook", async (context) => {
  const mine = await agentWithReceiver(context, 'both');
  const theirs = await agentWithReceiver(context, 'both');
  const ping = await request(context.server, 'POST', '/whoami/webhook/test', {
    token: theirs.agent.api_token,
  });
  assert.is(ping.status, 202);
  const genuine = (await theirs.relay.answeredAtLeast(1))[0] as Delivery;
  assert.is(genuine.answered, 204, 'their own receiver takes it');
  assert.is(await deliver(mine.receiver.url, genuine.headers, genuine.body), 401);
  // Mine still takes what is mine, and nothing else was handled.
  const own = await request<{ delivery_id: string }>(
    context.server,
    'POST',
    '/whoami/webhook/test',
    { token: mine.agent.api_token },
  );
  const printed = await mine.receiver.printedAtLeast(1);
  assert.equal(
    printed.map((event) => event.webhook_id),
    [own.body.delivery_id],
  );
  await mine.receiver.stop();
  await theirs.receiver.stop();
});

test.run();
