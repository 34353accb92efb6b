import * as assert from 'uvu/assert';
import { connectMcp } from '../helpers/clients.ts';
import { TestClock } from '../helpers/clock.ts';
import { mcpClient, serverSuite } from '../helpers/server-suite.ts';
import {
  assertRefused,
  listTokens,
  madeToken,
  revokeToken,
  rotateToken,
  toolRefusal,
  whoamiAs,
} from '../helpers/tokens.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * The life of an API token through the real doors: made with create_token (the secret shown
 * once), listed without it, revoked, rotated (at once or after a grace) and expiring, on a
 * clock the test moves. A token refused says why (`reason`) on HTTP and on MCP alike.
 */
const test = serverSuite<{ clock: TestClock }>('API tokens: create, list, revoke, rotate', () => {
  const clock = new TestClock();
  return { extra: { clock }, config: { clock } };
});

const HOUR_MS = 3_600_000;

test('create_token answers 201 with the secret once, and the new token opens the account', async ({
  server,
}) => {
  const agent = await server.signUp();
  const made = await madeToken(server, agent.api_token, { name: 'ci runner' });
  assert.match(made.api_token, /^asvc_[0-9A-Za-z]{46}$/);
  assert.is(made.name, 'ci runner');
  assert.equal(made.scopes, []);
  assert.is(made.expires_at, null);
  assert.is.not(made.api_token, agent.api_token);

  const me = await whoamiAs(server, made.api_token);
  assert.is(me.status, 200, JSON.stringify(me.body));
  assert.is((me.body as unknown as { agent_id: string }).agent_id, agent.agent_id);

  // list_tokens never shows a secret again, whichever token asks.
  for (const asker of [agent.api_token, made.api_token]) {
    const raw = await (await server.get('/whoami/tokens', asker)).text();
    assert.not.ok(raw.includes(made.api_token), 'the new secret is not listed');
    assert.not.ok(raw.includes(agent.api_token), 'the sign-up secret is not listed');
    assert.not.ok(raw.includes('asvc_'), 'no secret of any token is listed');
    assert.not.ok(raw.includes('api_token'), 'no secret field at all');
  }
});

test('list_tokens shows every live token, oldest first, and marks the one asking as current', async ({
  server,
  clock,
}) => {
  const agent = await server.signUp();
  // Made a moment later: tokens made in the same millisecond are in no promised order.
  clock.advance(1);
  const made = await madeToken(server, agent.api_token, { name: 'backup job' });

  const bySignUp = await listTokens(server, agent.api_token);
  assert.equal(
    bySignUp.map((line) => [line.name, line.current]),
    [
      ['sign-up', true],
      ['backup job', false],
    ],
  );
  const byNew = await listTokens(server, made.api_token);
  assert.equal(
    byNew.map((line) => [line.name, line.current]),
    [
      ['sign-up', false],
      ['backup job', true],
    ],
  );
  const line = byNew[1];
  assert.is(line?.token_id, made.token_id);
  assert.equal(line?.scopes, []);
  assert.is(line?.expires_at, null);
  assert.is(line?.created_at, new Date(line?.created_at ?? '').toISOString());
});

test('list_tokens shows when a token was last used, and not before its first use', async ({
  server,
  clock,
}) => {
  const agent = await server.signUp();
  const made = await madeToken(server, agent.api_token, { name: 'used later' });
  const unused = (await listTokens(server, agent.api_token)).find(
    (line) => line.token_id === made.token_id,
  );
  assert.is(unused?.last_used_at, null, 'never used yet');

  clock.advance(5 * 60_000);
  const usedAt = new Date(clock.now()).toISOString();
  assert.is((await whoamiAs(server, made.api_token)).status, 200);
  // The use is noted beside the request: ask until the note is there (each try a real request).
  let lastUsed: string | null = null;
  for (let tries = 0; tries < 200 && lastUsed === null; tries++) {
    const lines = await listTokens(server, agent.api_token);
    lastUsed = lines.find((line) => line.token_id === made.token_id)?.last_used_at ?? null;
  }
  assert.is(lastUsed, usedAt);
});

test('list_tokens leaves out revoked and expired tokens', async ({ server, clock }) => {
  const agent = await server.signUp();
  const revoked = await madeToken(server, agent.api_token, { name: 'to revoke' });
  await madeToken(server, agent.api_token, { name: 'short lived', expires_in_hours: 1 });
  const kept = await madeToken(server, agent.api_token, { name: 'kept' });
  assert.is((await revokeToken(server, agent.api_token, revoked.token_id)).status, 200);
  const names = async (token: string) =>
    (await listTokens(server, token)).map((line) => line.name).sort();
  assert.equal(await names(agent.api_token), ['kept', 'short lived', 'sign-up']);

  clock.advance(HOUR_MS);
  assert.equal(await names(kept.api_token), ['kept', 'sign-up']);
});

test('a token of one workspace lists only itself', async ({ server }) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  await madeToken(server, agent.api_token, { name: 'another' });
  const scoped = await madeToken(server, agent.api_token, {
    name: 'one workspace',
    scopes: [`workspace:${workspaceId}`],
  });
  const lines = await listTokens(server, scoped.api_token);
  assert.equal(
    lines.map((line) => [line.token_id, line.current, line.scopes]),
    [[scoped.token_id, true, [`workspace:${workspaceId}`]]],
  );
  assert.is((await listTokens(server, agent.api_token)).length, 3, 'the agent still has three');
});

test('a revoked token stops at once over HTTP and MCP (header and api_token), though each had it cached', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const made = await madeToken(server, agent.api_token, { name: 'leaky' });
  // Used on every door first, so that every door has it in hand.
  const byHeader = await mcpClient(context, made.api_token);
  const byArgument = await mcpClient(context, '');
  assert.is((await whoamiAs(server, made.api_token)).status, 200);
  assert.is(await toolRefusal(byHeader, 'whoami', {}), null);
  assert.is(await toolRefusal(byArgument, 'whoami', { api_token: made.api_token }), null);

  const revoked = await revokeToken(server, agent.api_token, made.token_id);
  assert.is(revoked.status, 200, JSON.stringify(revoked.body));
  assert.equal(revoked.body, { token_id: made.token_id, revoked: true });

  assertRefused(await whoamiAs(server, made.api_token), 'revoked', 'HTTP');
  for (const [door, problem] of [
    ['MCP header', await toolRefusal(byHeader, 'whoami', {})],
    ['MCP api_token', await toolRefusal(byArgument, 'whoami', { api_token: made.api_token })],
  ] as const) {
    assert.is(problem?.code, 'unauthorized', door);
    assert.is(problem?.reason, 'revoked', door);
  }
  // A new MCP session with it fares no better.
  const fresh = await connectMcp(server, made.api_token, 'fresh');
  try {
    assert.is((await toolRefusal(fresh, 'list_tokens', {}))?.reason, 'revoked');
  } finally {
    await fresh.close();
  }
  assert.is((await whoamiAs(server, agent.api_token)).status, 200, 'the other token still works');
});

test('revoking a token id that is not one of yours is 404, and revoking twice is too', async ({
  server,
}) => {
  const agent = await server.signUp();
  const other = await server.signUp();
  const unknown = await revokeToken(server, agent.api_token, crypto.randomUUID());
  assert.is(unknown.status, 404, JSON.stringify(unknown.body));
  assert.is(unknown.body.code, 'not_found');

  const othersToken = await madeToken(server, other.api_token, { name: 'not yours' });
  const foreign = await revokeToken(server, agent.api_token, othersToken.token_id);
  assert.is(foreign.status, 404, 'another agent’s token is not there for you');
  assert.is((await whoamiAs(server, othersToken.api_token)).status, 200, 'and it still works');

  const made = await madeToken(server, agent.api_token, { name: 'twice' });
  assert.is((await revokeToken(server, agent.api_token, made.token_id)).status, 200);
  assert.is((await revokeToken(server, agent.api_token, made.token_id)).status, 404);
});

test('rotate_token with no grace stops the old token at once and hands a new one with the same name, scopes and expiry', async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const old = await madeToken(server, agent.api_token, {
    name: 'deploy bot',
    scopes: ['read', `workspace:${workspaceId}`],
    expires_in_hours: 48,
  });
  assert.is((await whoamiAs(server, old.api_token)).status, 200, 'cached before the rotation');

  const rotated = await rotateToken(server, old.api_token, { grace_hours: 0 });
  assert.is(rotated.status, 201, JSON.stringify(rotated.body));
  assert.is(rotated.body.old_token_id, old.token_id);
  assert.is.not(rotated.body.token_id, old.token_id);
  assert.is.not(rotated.body.api_token, old.api_token);
  assert.is(rotated.body.name, 'deploy bot');
  assert.equal(rotated.body.scopes, old.scopes);
  assert.is(rotated.body.expires_at, old.expires_at);

  assertRefused(await whoamiAs(server, old.api_token), 'revoked', 'the old token');
  assert.is((await whoamiAs(server, rotated.body.api_token)).status, 200, 'the new token');
  const lines = await listTokens(server, agent.api_token);
  const rotatedLine = lines.find((line) => line.name === 'deploy bot');
  assert.is(lines.length, 2, 'sign-up and the new one');
  assert.equal(
    [rotatedLine?.token_id, rotatedLine?.scopes, rotatedLine?.expires_at],
    [rotated.body.token_id, old.scopes, old.expires_at],
  );
});

test('rotate_token with a grace of 2 hours keeps the old token until the clock passes it, then it is expired', async ({
  server,
  clock,
}) => {
  const agent = await server.signUp();
  const rotated = await rotateToken(server, agent.api_token, { grace_hours: 2 });
  assert.is(rotated.status, 201, JSON.stringify(rotated.body));
  assert.is(
    rotated.body.old_token_stops_at,
    new Date(clock.now() + 2 * HOUR_MS).toISOString(),
    'says when the old one stops',
  );
  assert.is(rotated.body.name, 'sign-up');

  clock.advance(2 * HOUR_MS - 1);
  assert.is((await whoamiAs(server, agent.api_token)).status, 200, 'the old one, within grace');
  assert.is((await whoamiAs(server, rotated.body.api_token)).status, 200, 'the new one');

  clock.advance(1);
  assertRefused(await whoamiAs(server, agent.api_token), 'expired', 'the old one after grace');
  assert.is((await whoamiAs(server, rotated.body.api_token)).status, 200, 'the new one lasts');
  assert.equal(
    (await listTokens(server, rotated.body.api_token)).map((line) => line.token_id),
    [rotated.body.token_id],
  );
});

test('a token made to expire works until the clock reaches its expiry, then answers 401 expired', async (context) => {
  const { server, clock } = context;
  const agent = await server.signUp();
  const made = await madeToken(server, agent.api_token, {
    name: 'ninety minutes',
    expires_in_hours: 1.5,
  });
  assert.is(made.expires_at, new Date(clock.now() + 1.5 * HOUR_MS).toISOString());
  const client = await mcpClient(context, made.api_token);

  clock.advance(1.5 * HOUR_MS - 1);
  assert.is((await whoamiAs(server, made.api_token)).status, 200);
  assert.is(await toolRefusal(client, 'whoami', {}), null);

  clock.advance(1);
  assertRefused(await whoamiAs(server, made.api_token), 'expired', 'HTTP');
  const problem = await toolRefusal(client, 'whoami', {});
  assert.is(problem?.code, 'unauthorized');
  assert.is(problem?.reason, 'expired');
  assert.is((await whoamiAs(server, agent.api_token)).status, 200, 'the sign-up token lasts');
});

test.run();
