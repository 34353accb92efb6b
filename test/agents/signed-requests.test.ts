import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { callJson } from '../helpers/http.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import { addKey, newKey, signedHeaders, signedJson, type AgentKey } from '../helpers/signatures.ts';

/**
 * Signed requests (RFC 9421) at the HTTP door, signed by an independent implementation
 * (http-message-signatures): keys, the policy, and each attack the issue names.
 */
const test = serverSuite<{ operatorToken: string }>(
  'signed requests: keys, the policy and the attacks on them',
  () => {
    const operatorToken = newToken();
    return { extra: { operatorToken }, config: { operatorToken } };
  },
);

async function agentWithKey(server: Parameters<typeof addKey>[0]) {
  const agent = await server.signUp();
  const key = newKey();
  await addKey(server, agent.api_token, key);
  return { ...agent, key };
}

async function requireSignatures(
  server: Parameters<typeof addKey>[0],
  token: string,
  key: AgentKey,
): Promise<void> {
  const set = await signedJson(server, key, 'PUT', '/whoami/signature-policy', token, {
    require_signature: true,
  });
  assert.is(set.status, 200, JSON.stringify(set.body));
}

test('a key is added, listed by its RFC 7638 thumbprint, and revoked', async ({ server }) => {
  const agent = await server.signUp();
  const key = newKey();
  const keyId = await addKey(server, agent.api_token, key);
  assert.match(keyId, /^[A-Za-z0-9_-]{43}$/);
  const listed = await callJson<{ keys: { key_id: string }[]; require_signature: boolean }>(
    server,
    'GET',
    '/whoami/keys',
    agent.api_token,
  );
  assert.equal(
    listed.body.keys.map((k) => k.key_id),
    [keyId],
  );
  assert.is(listed.body.require_signature, false);
  const again = await callJson(server, 'POST', '/whoami/keys', agent.api_token, { jwk: key.jwk });
  assert.is(again.status, 409);
  assert.is(again.body.code, 'key_exists');
  const revoked = await callJson(server, 'DELETE', `/whoami/keys/${keyId}`, agent.api_token);
  assert.is(revoked.status, 200, JSON.stringify(revoked.body));
  const gone = await callJson(server, 'DELETE', `/whoami/keys/${keyId}`, agent.api_token);
  assert.is(gone.status, 404);
  // The agent hears of both in its feed: a key it did not add would be a thief's.
  const feed = await callJson<{ changes: { type: string; data: { key_id?: string } }[] }>(
    server,
    'GET',
    '/changes',
    agent.api_token,
  );
  const told = feed.body.changes.filter((change) => change.type.startsWith('key.'));
  assert.equal(
    told.map((change) => [change.type, change.data.key_id]),
    [
      ['key.added', keyId],
      ['key.revoked', keyId],
    ],
  );
});

test('the key id is the RFC 7638 thumbprint of the JWK (the RFC 8037 example key)', async ({
  server,
}) => {
  // RFC 8037 appendix A.3: the thumbprint of this public key.
  const agent = await server.signUp();
  const added = await callJson<{ key_id: string }>(
    server,
    'POST',
    '/whoami/keys',
    agent.api_token,
    {
      jwk: { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' },
    },
  );
  assert.is(added.status, 201, JSON.stringify(added.body));
  assert.is(added.body.key_id, 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k');
});

test('at most ten live keys an agent', async ({ server }) => {
  const agent = await server.signUp();
  for (let i = 0; i < 10; i++) await addKey(server, agent.api_token, newKey());
  const eleventh = await callJson(server, 'POST', '/whoami/keys', agent.api_token, {
    jwk: newKey().jwk,
  });
  assert.is(eleventh.status, 409);
  assert.is(eleventh.body.code, 'limit_reached');
});

test('a signed request without a token is its key\u2019s agent; with a token, both must agree', async ({
  server,
}) => {
  const agent = await agentWithKey(server);
  const whoami = await signedJson<{ agent_id: string }>(server, agent.key, 'GET', '/whoami', null);
  assert.is(whoami.status, 200, JSON.stringify(whoami.body));
  assert.is(whoami.body.agent_id, agent.agent_id);
  const other = await server.signUp();
  const mixed = await signedJson(server, agent.key, 'GET', '/whoami', other.api_token);
  assert.is(mixed.status, 401);
  assert.is(mixed.body.code, 'invalid_signature');
  assert.is(mixed.body.reason, 'agent_mismatch');
});

test('under the policy a bearer token alone reads but cannot write; signed, it writes', async ({
  server,
}) => {
  const agent = await agentWithKey(server);
  const before = await callJson<{ require_signature: boolean }>(
    server,
    'GET',
    '/whoami',
    agent.api_token,
  );
  assert.is(before.body.require_signature, false);
  await requireSignatures(server, agent.api_token, agent.key);
  const read = await callJson<{ require_signature: boolean }>(
    server,
    'GET',
    '/whoami',
    agent.api_token,
  );
  assert.is(read.status, 200);
  assert.is(read.body.require_signature, true, 'whoami says writes need a signature');
  const write = await callJson(server, 'POST', '/workspaces', agent.api_token, { name: 'w' });
  assert.is(write.status, 401);
  assert.is(write.body.code, 'signature_required');
  assert.ok((write.body as { sign?: string[] }).sign?.includes('content-digest'));
  const signed = await signedJson(server, agent.key, 'POST', '/workspaces', agent.api_token, {
    name: 'w',
  });
  assert.is(signed.status, 201, JSON.stringify(signed.body));
  // Keyed: a replay of the signed write's key by the token alone is refused, not replayed.
  const key = crypto.randomUUID();
  const first = await fetch(server.url('/workspaces'), {
    method: 'POST',
    headers: {
      ...(await signedHeaders(
        agent.key,
        'POST',
        server.url('/workspaces'),
        {
          authorization: `Bearer ${agent.api_token}`,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        '{"name":"k"}',
      )),
    },
    body: '{"name":"k"}',
  });
  assert.is(first.status, 201);
  const replay = await fetch(server.url('/workspaces'), {
    method: 'POST',
    headers: {
      authorization: `Bearer ${agent.api_token}`,
      'content-type': 'application/json',
      'idempotency-key': key,
    },
    body: '{"name":"k"}',
  });
  assert.is(replay.status, 401);
  assert.is(((await replay.json()) as { code: string }).code, 'signature_required');
});

test('attacks: a changed body, path, query, method; a replayed nonce; created out of the window', async ({
  server,
}) => {
  const agent = await agentWithKey(server);
  const url = server.url('/workspaces');
  const body = '{"name":"a"}';
  const base = { authorization: `Bearer ${agent.api_token}`, 'content-type': 'application/json' };
  const post = (headers: Record<string, string>, sent: string, to = url, method = 'POST') =>
    fetch(to, { method, headers, body: sent }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as { code?: string; reason?: string },
    }));

  const changedBody = await post(
    await signedHeaders(agent.key, 'POST', url, base, body),
    '{"name":"b"}',
  );
  assert.is(changedBody.status, 401);
  assert.is(changedBody.body.reason, 'content_digest');

  const signedForOtherPath = await signedHeaders(agent.key, 'POST', url, base, body);
  const changedPath = await post(signedForOtherPath, body, server.url('/workspaces/x/invites'));
  assert.is(changedPath.status, 401);
  assert.is(changedPath.body.reason, 'signature');
  // The base rebuilt here is shown to help a signer, without the bearer token in it.
  const shown = (changedPath.body as { signature_base?: string }).signature_base ?? '';
  assert.match(shown, /"@path": \/workspaces\/x\/invites/);
  assert.not.match(shown, new RegExp(agent.api_token));

  const queryUrl = server.url('/store?limit=5');
  const signedQuery = await signedHeaders(agent.key, 'GET', queryUrl, {
    authorization: base.authorization,
  });
  const changedQuery = await fetch(server.url('/store?limit=6'), { headers: signedQuery });
  assert.is(changedQuery.status, 401);

  const noQuery = await signedHeaders(
    agent.key,
    'GET',
    queryUrl,
    { authorization: base.authorization },
    undefined,
    {
      fields: ['@method', '@authority', '@path', 'authorization'],
    },
  );
  const uncovered = (await (await fetch(queryUrl, { headers: noQuery })).json()) as {
    reason: string;
  };
  assert.is(uncovered.reason, 'coverage');

  const once = await signedHeaders(agent.key, 'POST', url, base, body, { nonce: 'n-1' });
  assert.is((await post(once, body)).status, 201);
  const replayed = await post(once, body);
  assert.is(replayed.status, 401);
  assert.is(replayed.body.reason, 'nonce_replayed');

  const old = await signedHeaders(agent.key, 'POST', url, base, body, {
    created: new Date(Date.now() - 301_000),
  });
  const stale = await post(old, body);
  assert.is(stale.status, 401);
  assert.is(stale.body.reason, 'created');

  const future = await signedHeaders(agent.key, 'POST', url, base, body, {
    created: new Date(Date.now() + 301_000),
  });
  assert.is((await post(future, body)).body.reason, 'created');

  const noDigest = await signedHeaders(agent.key, 'POST', url, base, undefined, {
    fields: ['@method', '@authority', '@path', 'authorization'],
  });
  const bodyUnsigned = await post(noDigest, body);
  assert.is(bodyUnsigned.status, 401);
  assert.is(bodyUnsigned.body.reason, 'coverage');

  const wrongAlg = await signedHeaders(agent.key, 'POST', url, base, body, {
    alg: 'rsa-pss-sha512',
  });
  assert.is((await post(wrongAlg, body)).body.reason, 'alg');
});

test('a revoked key is refused, and another agent\u2019s key with this agent\u2019s token', async ({
  server,
}) => {
  const agent = await agentWithKey(server);
  const spare = newKey();
  await addKey(server, agent.api_token, spare);
  const revoked = await callJson(server, 'DELETE', `/whoami/keys/${spare.keyId}`, agent.api_token);
  assert.is(revoked.status, 200);
  const byRevoked = await signedJson(server, spare, 'GET', '/whoami', agent.api_token);
  assert.is(byRevoked.status, 401);
  assert.is(byRevoked.body.reason, 'key_revoked');

  const mallory = await agentWithKey(server);
  const stolen = await signedJson(server, mallory.key, 'POST', '/workspaces', agent.api_token, {
    name: 'x',
  });
  assert.is(stolen.status, 401);
  assert.is(stolen.body.reason, 'agent_mismatch');
});

test('the policy needs a key, and the last key cannot be revoked under it', async ({ server }) => {
  const agent = await server.signUp();
  const none = await callJson(server, 'PUT', '/whoami/signature-policy', agent.api_token, {
    require_signature: true,
  });
  assert.is(none.status, 409);
  assert.is(none.body.code, 'last_key');
  const key = newKey();
  await addKey(server, agent.api_token, key);
  await requireSignatures(server, agent.api_token, key);
  const last = await signedJson(
    server,
    key,
    'DELETE',
    `/whoami/keys/${key.keyId}`,
    agent.api_token,
  );
  assert.is(last.status, 409, JSON.stringify(last.body));
  assert.is(last.body.code, 'last_key');
  // Adding or revoking a key is a write: unsigned, it is refused.
  const unsignedAdd = await callJson(server, 'POST', '/whoami/keys', agent.api_token, {
    jwk: newKey().jwk,
  });
  assert.is(unsignedAdd.status, 401);
  assert.is(unsignedAdd.body.code, 'signature_required');
  const off = await signedJson(server, key, 'PUT', '/whoami/signature-policy', agent.api_token, {
    require_signature: false,
  });
  assert.is(off.status, 200);
  const feed = await callJson<{
    changes: { type: string; data: { require_signature?: boolean } }[];
  }>(server, 'GET', '/changes', agent.api_token);
  assert.equal(
    feed.body.changes
      .filter((change) => change.type === 'signature_policy.changed')
      .map((change) => change.data.require_signature),
    [true, false],
  );
  const write = await callJson(server, 'POST', '/workspaces', agent.api_token, { name: 'w' });
  assert.is(write.status, 201);
});

test('a signature by a key not added here is ignored with a token, and named without one', async ({
  server,
}) => {
  const agent = await server.signUp();
  const stranger = newKey();
  stranger.keyId = 'web-bot-auth-directory-key-000000000000000';
  const withToken = await signedJson(server, stranger, 'GET', '/whoami', agent.api_token);
  assert.is(withToken.status, 200);
  const alone = await signedJson(server, stranger, 'GET', '/whoami', null);
  assert.is(alone.status, 401);
  assert.match(alone.body.detail ?? '', /no key added here/);
});

test('a suspended agent\u2019s signatures stop at once, in the process that suspended it too', async ({
  server,
  operatorToken,
}) => {
  const agent = await agentWithKey(server);
  assert.is((await signedJson(server, agent.key, 'GET', '/whoami', null)).status, 200, 'cached');
  const stopped = await callJson(
    server,
    'POST',
    `/operator/agents/${agent.agent_id}/suspend`,
    operatorToken,
    { reason: 'A test of signatures.' },
  );
  assert.is(stopped.status, 200, JSON.stringify(stopped.body));
  const refused = await signedJson(server, agent.key, 'GET', '/whoami', null);
  assert.is(refused.status, 401);
  assert.is(refused.body.reason, 'suspended');
});

test('hostile signature headers never fail on the service\u2019s side: each mangling is a 401 or, left whole, a 200', async ({
  server,
}) => {
  const agent = await agentWithKey(server);
  const url = server.url('/whoami');
  const good = await signedHeaders(agent.key, 'GET', url, {}, undefined, { nonce: null });
  const input = Object.entries(good).find(([name]) => name.toLowerCase() === 'signature-input')!;
  const signature = Object.entries(good).find(([name]) => name.toLowerCase() === 'signature')!;
  // Seeded, so that a failure names a case that comes again.
  let seed = 42;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const pieces = [
    '"',
    '(',
    ')',
    ';',
    '=',
    ':',
    ',',
    ' ',
    '\\',
    'keyid',
    'alg',
    'created',
    '@path',
    '9'.repeat(30),
    '-1',
    '?0',
    '*',
    'é',
  ];
  const mangle = (text: string) => {
    const at = random(text.length + 1);
    const cut = random(4);
    const piece = pieces[random(pieces.length)] as string;
    return text.slice(0, at) + piece + text.slice(at + cut);
  };
  for (let i = 0; i < 150; i++) {
    const which = random(3);
    const headers = {
      [input[0]]: which !== 1 ? mangle(input[1]) : input[1],
      [signature[0]]: which !== 0 ? mangle(signature[1]) : signature[1],
    };
    let response: Response;
    try {
      response = await fetch(url, { headers });
    } catch {
      continue; // a header value fetch itself refuses to send (a non-Latin-1 character)
    }
    const text = await response.text();
    assert.ok(
      [200, 401].includes(response.status),
      `${JSON.stringify(headers)}: ${response.status} ${text}`,
    );
    if (response.status === 401) {
      assert.ok(
        ['invalid_signature', 'unauthorized'].includes((JSON.parse(text) as { code: string }).code),
        text,
      );
    }
  }
});

test('malformed signature headers are refused with a reason', async ({ server }) => {
  const agent = await agentWithKey(server);
  const response = await fetch(server.url('/whoami'), {
    headers: {
      authorization: `Bearer ${agent.api_token}`,
      'signature-input': 'sig1=("@method"',
      signature: 'sig1=:AAAA:',
    },
  });
  assert.is(response.status, 401);
  assert.is(((await response.json()) as { reason: string }).reason, 'malformed');
});

test.run();
