import * as assert from 'uvu/assert';
import { callJson } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { addKey, newKey, signedHeaders, signedJson } from '../helpers/signatures.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * Signed requests across two processes on one PostgreSQL: a nonce is taken once whichever
 * process sees it, a key revoked on one is refused by the other (which had it cached), and the
 * policy set on one holds on the other.
 */
const test = postgresSuite<{ a: TestServer; b: TestServer }>(
  'two servers hold signatures together',
);

test.before(async (context) => {
  const databaseUrl = await freshDatabaseUrl();
  context.a = await startTestServer({ databaseUrl });
  context.b = await startTestServer({ databaseUrl });
});
test.after(async ({ a, b }) => {
  await a.close();
  await b.close();
});

test('a nonce taken by one process is refused by the other', async ({ a, b }) => {
  const agent = await a.signUp();
  const key = newKey();
  await addKey(a, agent.api_token, key);
  const body = '{"name":"once"}';
  // The same signed request, nonce and all, sent to each process.
  const send = async (server: TestServer) => {
    const url = server.url('/workspaces');
    const headers = await signedHeaders(
      key,
      'POST',
      url,
      { authorization: `Bearer ${agent.api_token}`, 'content-type': 'application/json' },
      body,
      { nonce: 'shared-nonce' },
    );
    return headers;
  };
  // Both servers listen on 127.0.0.1 with their own ports: the authority differs, so each
  // request is signed for its own server with the same nonce.
  const first = await fetch(a.url('/workspaces'), { method: 'POST', headers: await send(a), body });
  assert.is(first.status, 201, await first.text());
  const second = await fetch(b.url('/workspaces'), {
    method: 'POST',
    headers: await send(b),
    body,
  });
  assert.is(second.status, 401);
  assert.is(((await second.json()) as { reason: string }).reason, 'nonce_replayed');
});

test('a key revoked on one process is refused by the other, which had it cached', async ({
  a,
  b,
}) => {
  const agent = await a.signUp();
  const key = newKey();
  await addKey(a, agent.api_token, key);
  const cached = await signedJson(b, key, 'GET', '/whoami', null);
  assert.is(cached.status, 200, 'b caches the key');
  const revoked = await callJson(a, 'DELETE', `/whoami/keys/${key.keyId}`, agent.api_token);
  assert.is(revoked.status, 200);
  // The notice travels by NOTIFY: ask until it has arrived (each try is a real, signed request).
  let answer = cached;
  for (let tries = 0; tries < 500 && answer.status === 200; tries++) {
    answer = await signedJson(b, key, 'GET', '/whoami', null);
  }
  assert.is(answer.status, 401);
  assert.is(answer.body.reason, 'key_revoked');
});

test('the policy set on one process holds on the other', async ({ a, b }) => {
  const agent = await a.signUp();
  const key = newKey();
  await addKey(a, agent.api_token, key);
  assert.is((await callJson(b, 'GET', '/whoami', agent.api_token)).status, 200, 'b has the agent');
  const set = await signedJson(a, key, 'PUT', '/whoami/signature-policy', agent.api_token, {
    require_signature: true,
  });
  assert.is(set.status, 200);
  let status = 201;
  for (let tries = 0; tries < 500 && status !== 401; tries++) {
    status = (await callJson(b, 'POST', '/workspaces', agent.api_token, { name: `w${tries}` }))
      .status;
  }
  assert.is(status, 401, 'b refuses the unsigned write');
});

test.run();
