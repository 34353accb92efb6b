import * as assert from 'uvu/assert';
import { serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import {
  assertScopeRefusal,
  createToken,
  listTokens,
  madeToken,
  revokeToken,
  rotateToken,
  whoamiAs,
} from '../helpers/tokens.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * What a restricted token may do with tokens: make only tokens at least as restricted as
 * itself (a read-only one none), revoke only itself, rotate itself; and nobody makes a token
 * for a workspace they cannot see.
 */
const test = serverSuite('restricted tokens making, revoking and rotating tokens');

/** An agent with two workspaces and a token restricted to the first. */
async function agentWithWorkspaces(server: TestServer) {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const otherId = await newWorkspace(server, agent);
  return { agent, workspaceId, otherId };
}

/** The ids of the agent's live tokens, sorted: to see that nothing was made or revoked. */
const liveIds = async (server: TestServer, token: string) =>
  (await listTokens(server, token)).map((line) => line.token_id).sort();

test('a workspace token may not make a token for another workspace or for no workspace', async ({
  server,
}) => {
  const { agent, workspaceId, otherId } = await agentWithWorkspaces(server);
  const one = await madeToken(server, agent.api_token, {
    name: 'one',
    scopes: [`workspace:${workspaceId}`],
  });
  const before = await liveIds(server, agent.api_token);

  assertScopeRefusal(
    await createToken(server, one.api_token, {
      name: 'other',
      scopes: [`workspace:${otherId}`],
    }),
    `workspace:${otherId}`,
    'another workspace',
  );
  assertScopeRefusal(
    await createToken(server, one.api_token, { name: 'everything' }),
    'account',
    'no workspace',
  );
  assertScopeRefusal(
    await createToken(server, one.api_token, { name: 'read all', scopes: ['read'] }),
    'account',
    'read, of every workspace',
  );
  assert.equal(await liveIds(server, agent.api_token), before, 'no token was made');

  const narrower = await madeToken(server, one.api_token, {
    name: 'narrower',
    scopes: ['read', `workspace:${workspaceId}`],
  });
  assert.equal(narrower.scopes, ['read', `workspace:${workspaceId}`]);
  const same = await madeToken(server, one.api_token, {
    name: 'same',
    scopes: [`workspace:${workspaceId}`],
  });
  assert.equal(same.scopes, [`workspace:${workspaceId}`]);
});

test('a read token may make no token at all, not even a read one', async ({ server }) => {
  const { agent } = await agentWithWorkspaces(server);
  const read = await madeToken(server, agent.api_token, { name: 'reader', scopes: ['read'] });
  const before = await liveIds(server, agent.api_token);
  for (const body of [{ name: 'x', scopes: ['read'] }, { name: 'y' }]) {
    assertScopeRefusal(await createToken(server, read.api_token, body), 'write', body.name);
  }
  assert.equal(await liveIds(server, agent.api_token), before);
});

test('a restricted token that expires may not make one lasting longer, or for ever', async ({
  server,
}) => {
  const { agent, workspaceId } = await agentWithWorkspaces(server);
  const scopes = [`workspace:${workspaceId}`];
  const brief = await madeToken(server, agent.api_token, {
    name: 'brief',
    scopes,
    expires_in_hours: 2,
  });
  const before = await liveIds(server, agent.api_token);
  for (const body of [
    { name: 'for ever', scopes },
    { name: 'longer', scopes, expires_in_hours: 3 },
  ]) {
    const refused = await createToken(server, brief.api_token, body);
    assertScopeRefusal(refused, 'account', body.name);
    assert.match(refused.body.detail, brief.expires_at ?? 'no expiry?');
  }
  assert.equal(await liveIds(server, agent.api_token), before);
  const shorter = await madeToken(server, brief.api_token, {
    name: 'shorter',
    scopes,
    expires_in_hours: 1,
  });
  assert.ok(Date.parse(shorter.expires_at ?? '') < Date.parse(brief.expires_at ?? ''));
});

test('create_token for a workspace the caller cannot see is 404, and makes nothing', async ({
  server,
}) => {
  const { agent } = await agentWithWorkspaces(server);
  const stranger = await server.signUp();
  const theirs = await newWorkspace(server, stranger);
  const before = await liveIds(server, agent.api_token);
  for (const workspaceId of [theirs, crypto.randomUUID()]) {
    const refused = await createToken(server, agent.api_token, {
      name: 'not mine',
      scopes: [`workspace:${workspaceId}`],
    });
    assert.is(refused.status, 404, JSON.stringify(refused.body));
    assert.is(refused.body.code, 'not_found');
  }
  assert.equal(await liveIds(server, agent.api_token), before);
});

test('a restricted token may revoke itself and no other token', async ({ server }) => {
  const { agent, workspaceId } = await agentWithWorkspaces(server);
  const read = await madeToken(server, agent.api_token, { name: 'reader', scopes: ['read'] });
  const one = await madeToken(server, agent.api_token, {
    name: 'one',
    scopes: [`workspace:${workspaceId}`],
  });
  const signUpId = (await listTokens(server, agent.api_token)).find(
    (line) => line.name === 'sign-up',
  )?.token_id as string;

  assertScopeRefusal(
    await revokeToken(server, read.api_token, signUpId),
    'account',
    'a read token revoking the sign-up token',
  );
  // A token of one workspace is not told that the others exist.
  const hidden = await revokeToken(server, one.api_token, read.token_id);
  assert.is(hidden.status, 404, JSON.stringify(hidden.body));
  assert.is((await whoamiAs(server, agent.api_token)).status, 200, 'the sign-up token lives');
  assert.is((await whoamiAs(server, read.api_token)).status, 200, 'the read token lives');

  for (const own of [read, one]) {
    const revoked = await revokeToken(server, own.api_token, own.token_id);
    assert.is(revoked.status, 200, `${own.name}: ${JSON.stringify(revoked.body)}`);
    assert.is((await whoamiAs(server, own.api_token)).status, 401, `${own.name} stopped`);
  }
  assert.equal(await liveIds(server, agent.api_token), [signUpId]);
});

test('every token may rotate itself, a read-only one and a one-workspace one included', async ({
  server,
}) => {
  const { agent, workspaceId } = await agentWithWorkspaces(server);
  for (const scopes of [['read'], [`workspace:${workspaceId}`]]) {
    const old = await madeToken(server, agent.api_token, { name: scopes[0] as string, scopes });
    const rotated = await rotateToken(server, old.api_token);
    assert.is(rotated.status, 201, JSON.stringify(rotated.body));
    assert.equal(rotated.body.scopes, scopes);
    assert.is((await whoamiAs(server, old.api_token)).status, 401, 'the old one stopped');
    assert.is((await whoamiAs(server, rotated.body.api_token)).status, 200, 'the new one works');
  }
});

test.run();
