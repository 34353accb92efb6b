import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import * as assert from 'uvu/assert';
import {
  boundedRequest,
  MAX_ANSWER_HEADER_BYTES,
  OutgoingTimeout,
} from '../../actors/kernel/outgoing-request.ts';
import { chainAccess, RPC_ANSWER_BYTES } from '../../actors/payments/chain/clients.ts';
import { WEBHOOK_ANSWER_BYTES } from '../../actors/webhooks/post.ts';
import { request } from '../helpers/http.ts';
import { serverSuite } from '../helpers/server-suite.ts';

/**
 * Answers without end (issue 32 §2): real receivers on loopback that answer 200 and stream for
 * ever, trickle or flood their headers, trickle a body, or never answer. Each kind of outgoing
 * request (the helper itself, a webhook delivery through the running service, a chain RPC call
 * through the service's viem clients) ends within its deadline, having kept at most its bound.
 * The list of outgoing call sites is held by test/lint/outgoing-call-sites.test.ts.
 */

/**
 * Short, as the test waits it about ten times: still 20 trickled bytes of headers and of a
 * body (one every 20 ms), and far longer than a flood takes to reach the header bound.
 */
const DEADLINE_MS = 400;
/** What a deadline may overrun by on a loaded machine (scheduling, not reading). */
const SLACK_MS = 1500;
/** One socket read beyond a bound: Node reads at most this much before the helper sees it. */
const ONE_READ = 64 * 1024;

type Hostility =
  'streams for ever' | 'trickles headers' | 'floods headers' | 'trickles a body' | 'never answers';
const HOSTILITIES: Hostility[] = [
  'streams for ever',
  'trickles headers',
  'floods headers',
  'trickles a body',
  'never answers',
];

interface Hostile {
  url: string;
  /** Bytes the service's socket accepted from us (its reads plus kernel buffers). */
  written: number;
  /** Resolves when the service dropped the connection. */
  dropped: Promise<void>;
  close(): Promise<void>;
}

/** A raw TCP receiver on 127.0.0.1 speaking just enough HTTP/1.1 to be hostile. */
async function startHostile(kind: Hostility): Promise<Hostile> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let markDropped: () => void = () => undefined;
  const hostile: Hostile = {
    url: '',
    written: 0,
    dropped: new Promise((resolve) => (markDropped = resolve)),
    close: () =>
      new Promise((resolve) => {
        for (const timer of timers) clearInterval(timer);
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  const send = (socket: Socket, text: string | Buffer) => {
    if (socket.destroyed) return false;
    hostile.written += Buffer.byteLength(text);
    return socket.write(text);
  };
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      sockets.delete(socket);
      markDropped();
    });
    let answered = false;
    socket.on('data', (chunk: Buffer) => {
      // Answers once the request's head and body have come (the body is small JSON).
      if (answered || !chunk.includes('\r\n\r\n')) return;
      answered = true;
      const every = (ms: number, step: () => void) => {
        const timer = setInterval(() => (socket.destroyed ? clearInterval(timer) : step()), ms);
        timers.add(timer);
      };
      if (kind === 'never answers') return;
      if (kind === 'trickles headers') {
        send(socket, 'HTTP/1.1 200 OK\r\nx-slow: ');
        every(20, () => send(socket, 'a'));
        return;
      }
      if (kind === 'floods headers') {
        send(socket, 'HTTP/1.1 200 OK\r\n');
        const flood = () => {
          while (send(socket, `x-more: ${'b'.repeat(1000)}\r\n`));
        };
        socket.on('drain', flood);
        flood();
        return;
      }
      if (kind === 'trickles a body') {
        send(
          socket,
          'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n',
        );
        every(20, () => send(socket, ' '));
        return;
      }
      // Streams for ever: a JSON array that never closes, as fast as the socket takes it.
      send(socket, 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n[');
      const chunk64k = Buffer.from('0,'.repeat(32 * 1024));
      const stream = () => {
        while (send(socket, chunk64k));
      };
      socket.on('drain', stream);
      stream();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hostile.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return hostile;
}

const test = serverSuite<{ hostiles: Hostile[] }>('outgoing answers without end', () => ({
  extra: { hostiles: [] },
  config: { webhookAllowPrivate: true, webhookTimeoutMs: DEADLINE_MS },
}));

test.after.each(async ({ hostiles }) => {
  for (const hostile of hostiles.splice(0)) await hostile.close();
});

async function hostileFor(context: { hostiles: Hostile[] }, kind: Hostility): Promise<Hostile> {
  const hostile = await startHostile(kind);
  context.hostiles.push(hostile);
  return hostile;
}

for (const kind of HOSTILITIES) {
  test(`the bounded request to a receiver that ${kind} ends within its deadline, having kept at most its bound`, async (context) => {
    const hostile = await hostileFor(context, kind);
    const started = performance.now();
    const outcome = await boundedRequest(
      new URL(hostile.url),
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' },
      { timeoutMs: DEADLINE_MS, maxAnswerBytes: 4096 },
    ).then(
      (answer) => ({ answer }),
      (error: unknown) => ({ error: error as Error }),
    );
    const elapsed = performance.now() - started;
    assert.ok(elapsed < DEADLINE_MS + SLACK_MS, `${kind}: ended after ${elapsed} ms`);
    await hostile.dropped;
    if (kind === 'streams for ever') {
      assert.ok('answer' in outcome, 'the status and the first bytes are an answer');
      assert.is(outcome.answer.status, 200);
      assert.ok(outcome.answer.truncated);
      assert.is(outcome.answer.body.length, 4096);
      assert.ok(outcome.answer.bytesRead <= 4096 + ONE_READ, `read ${outcome.answer.bytesRead}`);
    } else if (kind === 'floods headers') {
      assert.ok('error' in outcome);
      assert.match(String((outcome.error as { code?: string }).code), /HPE_HEADER_OVERFLOW/);
      assert.ok(elapsed < DEADLINE_MS, 'refused at the header bound, before the deadline');
    } else {
      assert.ok('error' in outcome, `${kind}: ${JSON.stringify(outcome)}`);
      assert.instance(outcome.error, OutgoingTimeout);
    }
    // The kernel's socket buffers hold what the service never read; a stream not cut would
    // have pushed gigabytes (13.9 GB in 40 s before the fix).
    assert.ok(hostile.written < 16 * 1024 * 1024, `${kind}: pushed ${hostile.written} bytes`);
  });

  test(`a webhook delivery to a receiver that ${kind} ends within the attempt's deadline`, async (context) => {
    const { server } = context;
    const hostile = await hostileFor(context, kind);
    const agent = await server.signUp();
    const set = await request(server, 'PUT', '/whoami/webhook', {
      token: agent.api_token,
      body: { url: hostile.url },
    });
    assert.is(set.status, 200, JSON.stringify(set.body));
    const started = performance.now();
    await request(server, 'POST', '/whoami/webhook/test', { token: agent.api_token });
    await server.services.webhookDelivery.idle();
    const elapsed = performance.now() - started;
    assert.ok(elapsed < DEADLINE_MS + SLACK_MS, `${kind}: the attempt took ${elapsed} ms`);
    await hostile.dropped;
    const state = await request<{ last_error: string | null; failing_since: string | null }>(
      server,
      'GET',
      '/whoami/webhook',
      { token: agent.api_token },
    );
    if (kind === 'streams for ever') {
      assert.is(state.body.last_error, null, 'the 200 is the answer; the stream is cut');
    } else if (kind === 'floods headers') {
      assert.match(String(state.body.last_error), /HPE_HEADER_OVERFLOW/);
    } else {
      assert.is(state.body.last_error, `no answer within ${DEADLINE_MS} ms`);
    }
    assert.ok(hostile.written < 16 * 1024 * 1024, `${kind}: pushed ${hostile.written} bytes`);
  });

  test(`a chain RPC call to a node that ${kind} fails within the call's time limit`, async (context) => {
    const hostile = await hostileFor(context, kind);
    const access = chainAccess({
      rpcUrls: [hostile.url],
      chainId: 8453,
      usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      confirmations: 1,
      pollMs: 1000,
      expiryMs: 60_000,
      factory: null,
      rpcTimeoutMs: DEADLINE_MS,
    });
    const [client] = access?.clients ?? [];
    assert.ok(client);
    const started = performance.now();
    const error = await client.getBlockNumber().then(
      () => null,
      (failure: unknown) => failure as Error,
    );
    const elapsed = performance.now() - started;
    assert.ok(error, `${kind}: answered`);
    // One retry (RPC_RETRIES) after 100 ms: two deadlines at most.
    assert.ok(elapsed < 2 * DEADLINE_MS + 100 + SLACK_MS, `${kind}: failed after ${elapsed} ms`);
    if (kind === 'streams for ever') {
      assert.match(String(error.message), `larger than ${RPC_ANSWER_BYTES} bytes`);
    }
    await hostile.dropped;
    assert.ok(hostile.written < 16 * 1024 * 1024, `${kind}: pushed ${hostile.written} bytes`);
  });
}

test('an answer within the bound is read whole, and a webhook answer has a bound of a few KiB', async () => {
  assert.ok(WEBHOOK_ANSWER_BYTES <= 8 * 1024);
  assert.ok(MAX_ANSWER_HEADER_BYTES <= 16 * 1024);
  const server = createServer((socket) => {
    socket.once('data', () =>
      socket.end(
        'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}',
      ),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    const answer = await boundedRequest(
      url,
      { method: 'GET' },
      { timeoutMs: DEADLINE_MS, maxAnswerBytes: 2 },
    );
    assert.equal([answer.status, answer.body.toString(), answer.truncated], [200, '{}', false]);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

test.run();
