import * as assert from 'uvu/assert';
import { hashToken } from '../../actors/kernel/tokens.ts';
import type { Driver } from '../../storage/driver.ts';
import { connectSocket } from '../helpers/clients.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import { addKey, newKey, signedHeaders } from '../helpers/signatures.ts';
import { assertRefused, madeToken, revokeToken, whoamiAs } from '../helpers/tokens.ts';

/**
 * A token or signing key not yet kept in memory (new, or after a restart) is read from the database once,
 * however many callers bring it at once: a crowd of its sockets, a burst of its requests. Each
 * caller reading it for itself cost one read and one write (the note of its use) per caller, and
 * each read replaced the kept grant, so every socket connected before it read the token again
 * (5,000 sockets of one token: 5,105 reads and 5,105 writes). A read that began before the
 * token changed is shared with no one who asks after, and not kept.
 */
const test = serverSuite('credentials: a crowd of callers with one token or key', () => ({
  config: { socketsPerAgent: 1_000 },
}));

/** Counts the statements that read the token of `secret` by its hash, and those noting its use. */
function countTokenStatements(server: TestServer, secret: string) {
  const driver = server.services.driver as Driver & { query: Driver['query'] };
  const hash = Buffer.from(hashToken(secret));
  const counts = { reads: 0, notes: 0 };
  const query = driver.query;
  driver.query = ((text: string, params?: unknown[]) => {
    const first = params?.[0];
    if (/from agent_tokens t join agents/.test(text) && first instanceof Uint8Array) {
      if (hash.equals(Buffer.from(first))) counts.reads++;
    }
    if (/update agent_tokens set last_used_at/.test(text)) counts.notes++;
    return query.call(driver, text, params);
  }) as Driver['query'];
  return { counts, restore: () => (driver.query = query) };
}

test('two hundred sockets of one new token, connecting at once, read it once and note its use once', async ({
  server,
  sockets,
}) => {
  const agent = await server.signUp('crowd of sockets');
  const { api_token: secret } = await madeToken(server, agent.api_token, { name: 'crowd' });
  const { counts, restore } = countTokenStatements(server, secret);
  try {
    const crowd = Array.from({ length: 200 }, () => connectSocket(server, secret));
    sockets.push(...crowd);
    await Promise.all(
      crowd.map(
        (socket) =>
          new Promise<void>((resolve, reject) => {
            socket.once('connect', () => resolve());
            socket.once('connect_error', reject);
          }),
      ),
    );
    assert.is(counts.reads, 1, 'one read of the token');
    assert.is(counts.notes, 1, 'one note of its use');
  } finally {
    restore();
  }
});

test('fifty requests at once with one new token read it once and note its use once', async ({
  server,
}) => {
  const agent = await server.signUp('burst of requests');
  const { api_token: secret } = await madeToken(server, agent.api_token, { name: 'burst' });
  // Fifty connections open first (with the token already kept), so that the fifty requests
  // with the new one arrive together rather than one connection's handshake apart.
  const warm = await Promise.all(
    Array.from({ length: 50 }, () => whoamiAs(server, agent.api_token)),
  );
  assert.ok(warm.every((answer) => answer.status === 200));
  const { counts, restore } = countTokenStatements(server, secret);
  try {
    const answers = await Promise.all(Array.from({ length: 50 }, () => whoamiAs(server, secret)));
    assert.equal(
      answers.map((answer) => answer.status),
      answers.map(() => 200),
    );
    assert.is(counts.reads, 1, 'one read of the token');
    assert.is(counts.notes, 1, 'one note of its use');
  } finally {
    restore();
  }
});

test('fifty requests at once signed with one new key read the key once', async ({ server }) => {
  const agent = await server.signUp('burst of signed requests');
  const key = newKey();
  await addKey(server, agent.api_token, key);
  const warm = await Promise.all(
    Array.from({ length: 50 }, () => whoamiAs(server, agent.api_token)),
  );
  assert.ok(warm.every((answer) => answer.status === 200));
  const url = server.url('/whoami');
  const signed = await Promise.all(
    Array.from({ length: 50 }, () =>
      signedHeaders(key, 'GET', url, { accept: 'application/json' }),
    ),
  );
  const driver = server.services.driver as Driver & { query: Driver['query'] };
  const query = driver.query;
  let reads = 0;
  driver.query = ((text: string, params?: unknown[]) => {
    if (/from agent_keys k join agents/.test(text) && params?.[0] === key.keyId) reads++;
    return query.call(driver, text, params);
  }) as Driver['query'];
  try {
    const answers = await Promise.all(signed.map((headers) => fetch(url, { headers })));
    assert.equal(
      answers.map((answer) => answer.status),
      answers.map(() => 200),
    );
    assert.is(reads, 1, 'one read of the key');
  } finally {
    driver.query = query;
  }
});

test('a read of a token that began before its revoke is neither shared nor kept', async ({
  server,
}) => {
  const agent = await server.signUp('revoked while read');
  const made = await madeToken(server, agent.api_token, { name: 'doomed' });
  const hash = Buffer.from(hashToken(made.api_token));
  // The first read of the token answers only once the revoke is done.
  const driver = server.services.driver as Driver & { query: Driver['query'] };
  const query = driver.query;
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = false;
  let reading: () => void = () => undefined;
  const readStarted = new Promise<void>((resolve) => (reading = resolve));
  driver.query = (async (text: string, params?: unknown[]) => {
    const rows = await query.call(driver, text, params);
    const first = params?.[0];
    if (!held && first instanceof Uint8Array && hash.equals(Buffer.from(first))) {
      held = true;
      reading();
      await released;
    }
    return rows;
  }) as Driver['query'];
  try {
    const before = whoamiAs(server, made.api_token);
    await readStarted;
    const revoked = await revokeToken(server, agent.api_token, made.token_id);
    assert.is(revoked.status, 200, JSON.stringify(revoked.body));
    // Asked after the revoke, while the earlier read is still out: a read of its own.
    assertRefused(await whoamiAs(server, made.api_token), 'revoked', 'asked during the read');
    release();
    await before;
    // What the earlier read found was not kept.
    assertRefused(await whoamiAs(server, made.api_token), 'revoked', 'asked after the read');
  } finally {
    release();
    driver.query = query;
  }
});

test.run();
