import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { trustedProxies } from '../../server/http/client-address.ts';
import { TestClock } from '../helpers/clock.ts';
import { startServiceProcess } from '../helpers/service-process.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The caller's address behind a proxy (TRUSTED_PROXIES): the per-address limits count the
 * right-most X-Forwarded-For entry that is not a trusted proxy, and only when the peer (here
 * 127.0.0.1) is trusted; anyone else's X-Forwarded-For is ignored, so no caller picks its bucket.
 */
const test = suite('the caller address behind a trusted proxy');

/** Two requests a minute per address; time stands still (TestClock). */
async function serverTrusting(proxies: string): Promise<TestServer> {
  return startTestServer({
    rateLimitPerMinute: 2,
    trustedProxies: trustedProxies(proxies),
    clock: new TestClock(),
  });
}

async function statusFor(server: TestServer, forwardedFor?: string): Promise<number> {
  const response = await fetch(server.url('/whoami'), {
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  });
  await response.arrayBuffer();
  return response.status;
}

test('behind a trusted proxy each forwarded address has a bucket of its own', async () => {
  const server = await serverTrusting('127.0.0.1');
  try {
    const first = '203.0.113.1';
    // The caller wrote the left entry itself; the proxy appended the address it saw.
    assert.equal(
      [
        await statusFor(server, first),
        await statusFor(server, `198.51.100.9, ${first}`),
        await statusFor(server, first),
      ],
      [401, 401, 429],
    );
    assert.is(await statusFor(server, '203.0.113.2'), 401);
    // The peer's own bucket is yet another.
    assert.is(await statusFor(server), 401);
  } finally {
    await server.close();
  }
});

test('the right-most untrusted entry counts: entries of trusted proxies are skipped', async () => {
  const server = await serverTrusting('127.0.0.1, 10.0.0.0/8');
  try {
    const statuses = [];
    for (const forged of ['1.1.1.1', '2.2.2.2', '3.3.3.3'])
      statuses.push(await statusFor(server, `${forged}, 203.0.113.7, 10.1.2.3`));
    assert.equal(statuses, [401, 401, 429]);
  } finally {
    await server.close();
  }
});

test('without TRUSTED_PROXIES a forged X-Forwarded-For changes nothing', async () => {
  const server = await startTestServer({ rateLimitPerMinute: 2, clock: new TestClock() });
  try {
    const statuses = [];
    for (let i = 1; i <= 3; i++) statuses.push(await statusFor(server, `203.0.113.${i}`));
    assert.equal(statuses, [401, 401, 429]);
  } finally {
    await server.close();
  }
});

test('from a peer that is not a trusted proxy, X-Forwarded-For is ignored', async () => {
  const server = await serverTrusting('10.0.0.0/8');
  try {
    const statuses = [];
    for (let i = 1; i <= 3; i++) statuses.push(await statusFor(server, `203.0.113.${i}`));
    assert.equal(statuses, [401, 401, 429]);
  } finally {
    await server.close();
  }
});

test('a malformed X-Forwarded-For is ignored safely: the trusted peer is the bucket', async () => {
  const server = await serverTrusting('127.0.0.1');
  try {
    const statuses = [];
    for (const header of ['not an address', '203.0.113.1, ;DROP', ' , ,'])
      statuses.push(await statusFor(server, header));
    assert.equal(statuses, [401, 401, 429]);
    // Left of a malformed entry nothing is read, even a well-formed address.
    assert.is(await statusFor(server, '203.0.113.1, garbage'), 429);
  } finally {
    await server.close();
  }
});

test('an invalid TRUSTED_PROXIES stops start-up with a message naming it', async () => {
  for (const invalid of ['10.0.0.0/33', 'proxy.example.org', '10.0.0.1/8/8']) {
    const refused = await startServiceProcess({ TRUSTED_PROXIES: invalid }).then(
      async (running) => {
        await running.stop();
        return '';
      },
      (error: Error) => error.message,
    );
    assert.match(refused, /TRUSTED_PROXIES/);
    assert.match(refused, invalid);
  }
});

test.run();
