import { workspaceOf } from '../helpers/direct-workspaces.ts';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { assertScopeRefused, liveTokenIds, tokenWorks } from '../helpers/direct-agents.ts';
import { directDoor, type DirectDoor } from '../helpers/direct.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * What a restricted token may do with tokens: make only tokens at least as restricted as
 * itself (a read-only one none), revoke only itself, rotate itself; and nobody makes a token
 * for a workspace they cannot see. Through the direct door: the scope checks at the HTTP and
 * MCP doors are in token-scopes.test.ts.
 */
const test = suite<{ server: TestServer; door: DirectDoor }>(
  'restricted tokens making, revoking and rotating tokens',
);

test.before(async (context) => {
  context.server = await startTestServer();
  context.door = directDoor(context.server.services);
});
test.after(async ({ server }) => {
  await server.close();
});

/** An agent with two workspaces and a token restricted to the first. */
async function agentWithWorkspaces(door: DirectDoor) {
  const agent = await door.signUp();
  const workspaceId = await workspaceOf(door, agent);
  const otherId = await workspaceOf(door, agent);
  return { agent, workspaceId, otherId };
}

test('a workspace token may not make a token for another workspace or for no workspace', async ({
  door,
}) => {
  const { agent, workspaceId, otherId } = await agentWithWorkspaces(door);
  const one = await door.call(
    'create_token',
    { name: 'one', scopes: [`workspace:${workspaceId}`] },
    agent.api_token,
  );
  const before = await liveTokenIds(door, agent.api_token);

  assertScopeRefused(
    await door.refusal(
      'create_token',
      { name: 'other', scopes: [`workspace:${otherId}`] },
      one.api_token,
    ),
    `workspace:${otherId}`,
    'another workspace',
  );
  assertScopeRefused(
    await door.refusal('create_token', { name: 'everything' }, one.api_token),
    'account',
    'no workspace',
  );
  assertScopeRefused(
    await door.refusal('create_token', { name: 'read all', scopes: ['read'] }, one.api_token),
    'account',
    'read, of every workspace',
  );
  assert.equal(await liveTokenIds(door, agent.api_token), before, 'no token was made');

  const narrower = await door.call(
    'create_token',
    { name: 'narrower', scopes: ['read', `workspace:${workspaceId}`] },
    one.api_token,
  );
  assert.equal(narrower.scopes, ['read', `workspace:${workspaceId}`]);
  const same = await door.call(
    'create_token',
    { name: 'same', scopes: [`workspace:${workspaceId}`] },
    one.api_token,
  );
  assert.equal(same.scopes, [`workspace:${workspaceId}`]);
});

test('a read token may make no token at all, not even a read one', async ({ door }) => {
  const { agent } = await agentWithWorkspaces(door);
  const read = await door.call(
    'create_token',
    { name: 'reader', scopes: ['read'] },
    agent.api_token,
  );
  const before = await liveTokenIds(door, agent.api_token);
  for (const input of [{ name: 'x', scopes: ['read' as const] }, { name: 'y' }]) {
    assertScopeRefused(
      await door.refusal('create_token', input, read.api_token),
      'write',
      input.name,
    );
  }
  assert.equal(await liveTokenIds(door, agent.api_token), before);
});

test('a restricted token that expires may not make one lasting longer, or for ever', async ({
  door,
}) => {
  const { agent, workspaceId } = await agentWithWorkspaces(door);
  const scopes = [`workspace:${workspaceId}` as const];
  const brief = await door.call(
    'create_token',
    { name: 'brief', scopes, expires_in_hours: 2 },
    agent.api_token,
  );
  const before = await liveTokenIds(door, agent.api_token);
  for (const input of [
    { name: 'for ever', scopes },
    { name: 'longer', scopes, expires_in_hours: 3 },
  ]) {
    const refused = await door.refusal('create_token', input, brief.api_token);
    assertScopeRefused(refused, 'account', input.name);
    assert.match(refused.message, brief.expires_at ?? 'no expiry?');
  }
  assert.equal(await liveTokenIds(door, agent.api_token), before);
  const shorter = await door.call(
    'create_token',
    { name: 'shorter', scopes, expires_in_hours: 1 },
    brief.api_token,
  );
  assert.ok(Date.parse(shorter.expires_at ?? '') < Date.parse(brief.expires_at ?? ''));
});

test('create_token for a workspace the caller cannot see is 404, and makes nothing', async ({
  door,
}) => {
  const { agent } = await agentWithWorkspaces(door);
  const stranger = await door.signUp();
  const theirs = await workspaceOf(door, stranger);
  const before = await liveTokenIds(door, agent.api_token);
  for (const workspaceId of [theirs, crypto.randomUUID()]) {
    const refused = await door.refusal(
      'create_token',
      { name: 'not mine', scopes: [`workspace:${workspaceId}`] },
      agent.api_token,
    );
    assert.is(refused.code, 'not_found', refused.message);
  }
  assert.equal(await liveTokenIds(door, agent.api_token), before);
});

test('a restricted token may revoke itself and no other token', async ({ door }) => {
  const { agent, workspaceId } = await agentWithWorkspaces(door);
  const read = await door.call(
    'create_token',
    { name: 'reader', scopes: ['read'] },
    agent.api_token,
  );
  const one = await door.call(
    'create_token',
    { name: 'one', scopes: [`workspace:${workspaceId}`] },
    agent.api_token,
  );
  const signUpId = (await door.call('list_tokens', {}, agent.api_token)).tokens.find(
    (line) => line.name === 'sign-up',
  )?.token_id as string;

  assertScopeRefused(
    await door.refusal('revoke_token', { token_id: signUpId }, read.api_token),
    'account',
    'a read token revoking the sign-up token',
  );
  // A token of one workspace is not told that the others exist.
  const hidden = await door.refusal('revoke_token', { token_id: read.token_id }, one.api_token);
  assert.is(hidden.code, 'not_found', hidden.message);
  assert.ok(await tokenWorks(door, agent.api_token), 'the sign-up token lives');
  assert.ok(await tokenWorks(door, read.api_token), 'the read token lives');

  for (const own of [read, one]) {
    await door.call('revoke_token', { token_id: own.token_id }, own.api_token);
    assert.not.ok(await tokenWorks(door, own.api_token), `${own.name} stopped`);
  }
  assert.equal(await liveTokenIds(door, agent.api_token), [signUpId]);
});

test('every token may rotate itself, a read-only one and a one-workspace one included', async ({
  door,
}) => {
  const { agent, workspaceId } = await agentWithWorkspaces(door);
  for (const scopes of [['read' as const], [`workspace:${workspaceId}` as const]]) {
    const old = await door.call(
      'create_token',
      { name: scopes[0] as string, scopes },
      agent.api_token,
    );
    const rotated = await door.call('rotate_token', {}, old.api_token);
    assert.equal(rotated.scopes, scopes);
    assert.not.ok(await tokenWorks(door, old.api_token), 'the old one stopped');
    assert.ok(await tokenWorks(door, rotated.api_token), 'the new one works');
  }
});

test.run();
