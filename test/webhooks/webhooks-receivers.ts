import { createPublicKey, verify } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import * as assert from 'uvu/assert';
import type { TestServer } from '../helpers/server.ts';

/** One POST as a receiver got it. */
export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** performance.now() when the whole body had arrived. */
  at: number;
}

/** What a receiver does with the n-th request (0-based): answer a status, later, or never. */
export type Behaviour = (n: number) => { status: number; delayMs?: number } | 'hang';

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  behaviour: Behaviour;
  /** Resolves once `count` requests have arrived; fails with `what` past a deadline. */
  waitFor(count: number, what?: string): Promise<Received[]>;
  close(): Promise<void>;
}

/** How long a wait may take before the test says what it waited for (a deadline, not a sleep). */
const DEADLINE_MS = 15_000;

/** A real receiver on 127.0.0.1, port 0 (node:http), recording every request. */
export async function startReceiver(
  behaviour: Behaviour = () => ({ status: 204 }),
): Promise<Receiver> {
  const waiters = new Set<() => void>();
  const hanging = new Set<ServerResponse>();
  const receiver: Receiver = {
    url: '',
    port: 0,
    received: [],
    behaviour,
    waitFor(count, what = `${count} deliveries`) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (receiver.received.length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(receiver.received.slice(0, count));
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`waited for ${what}; ${receiver.received.length} arrived`));
        }, DEADLINE_MS);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise((resolve) => {
        for (const response of hanging) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const n = receiver.received.length;
      receiver.received.push({
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: performance.now(),
      });
      const answer = receiver.behaviour(n);
      if (answer === 'hang') hanging.add(response);
      else {
        const send = () => response.writeHead(answer.status).end();
        if (answer.delayMs) setTimeout(send, answer.delayMs);
        else send();
      }
      for (const waiter of [...waiters]) waiter();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hooks`;
  return receiver;
}

/** A delivery's body. */
export interface WebhookBody {
  type: string;
  timestamp: string;
  data: {
    event_id: string;
    type: string;
    cursor: string;
    at: string;
    data: Record<string, unknown>;
  };
}

/**
 * Checks both signatures of a delivery: `v1` with the Standard Webhooks library and the secret,
 * `v1a` with node:crypto and the service key the JWKS lists under `webhook-key-id`.
 */
export async function assertSigned(
  server: TestServer,
  secret: string,
  delivery: Received,
): Promise<WebhookBody> {
  const headers = {
    'webhook-id': String(delivery.headers['webhook-id']),
    'webhook-timestamp': String(delivery.headers['webhook-timestamp']),
    'webhook-signature': String(delivery.headers['webhook-signature']),
  };
  const body = new Webhook(secret).verify(delivery.body, headers) as WebhookBody;
  const v1a = headers['webhook-signature']
    .split(' ')
    .find((part) => part.startsWith('v1a,'))
    ?.slice(4);
  assert.ok(v1a, 'a v1a signature is sent');
  const jwks = (await (await server.get('/.well-known/service-keys.json')).json()) as {
    keys: { kid: string; x: string }[];
  };
  const jwk = jwks.keys.find((key) => key.kid === delivery.headers['webhook-key-id']);
  assert.ok(jwk, 'webhook-key-id names a key of the JWKS');
  const publicKey = createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x },
    format: 'jwk',
  });
  const content = `${headers['webhook-id']}.${headers['webhook-timestamp']}.${delivery.body}`;
  assert.ok(
    verify(null, Buffer.from(content), publicKey, Buffer.from(v1a, 'base64')),
    'the v1a signature verifies with the JWKS key',
  );
  assert.is(body.data.event_id, headers['webhook-id'], 'webhook-id is the event id');
  return body;
}
