import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { CAPABILITIES } from '../../actors/capabilities.ts';
import type { Principal } from '../../actors/kernel/principal.ts';
import { Services } from '../../actors/kernel/services.ts';
import { assertScopesReachable } from '../../actors/kernel/token-scope.ts';
import { OPERATIONS } from '../../protocol/operations.ts';
import { callTool } from '../helpers/clients.ts';
import { callJson } from '../helpers/http.ts';
import { mcpClient, serverSuite } from '../helpers/server-suite.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * The agents capability builds on no other: the parts of the account other capabilities own
 * (the storage use, of files) and the checks of token scopes that name their things (a
 * workspace, of workspaces) are what those capabilities declare (`accountSections`,
 * `scopeTargets`). These tests enumerate the declarations from the capability list and hold the
 * answers to the protocol, so that a section or a check that goes missing, or one declared
 * twice, shows.
 */
const test = serverSuite('the account and token scopes take their parts from their capabilities');

const whoamiSchema = OPERATIONS.whoami.output;

/** Each object's members in order, at every depth, as `path: a,b,c`. */
function layoutOf(value: unknown, path = ''): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  const entries = Object.entries(value);
  return [
    `${path}: ${entries.map(([key]) => key).join(',')}`,
    ...entries.flatMap(([key, inner]) => layoutOf(inner, `${path}/${key}`)),
  ];
}

/** The same of a schema: the members its objects declare, in their order. */
function declaredLayoutOf(schema: z.ZodType, path = ''): string[] {
  if (!(schema instanceof z.ZodObject)) return [];
  const shape = schema.shape as Record<string, z.ZodType>;
  return [
    `${path}: ${Object.keys(shape).join(',')}`,
    ...Object.entries(shape).flatMap(([key, inner]) => declaredLayoutOf(inner, `${path}/${key}`)),
  ];
}

test("whoami answers every member its schema declares, in the schema's order at every depth, and no other, at each door", async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const overHttp = await callJson(server, 'GET', '/whoami', agent.api_token);
  assert.is(overHttp.status, 200, JSON.stringify(overHttp.body));
  const declared = declaredLayoutOf(whoamiSchema);
  assert.equal(layoutOf(overHttp.body), declared);
  assert.equal(JSON.stringify(whoamiSchema.parse(overHttp.body)), JSON.stringify(overHttp.body));

  const overMcp = await callTool(await mcpClient(context, agent.api_token), 'whoami', {});
  assert.not.ok(overMcp.isError, JSON.stringify(overMcp));
  assert.equal(layoutOf(overMcp.structuredContent), declared);
});

test("each account section a capability declares is a member of whoami's schema, and one capability's only", ({
  server,
}) => {
  const declared = CAPABILITIES.flatMap((capability) =>
    (capability.accountSections ?? []).map((section) => section.key),
  );
  assert.ok(declared.length > 0, 'the files capability declares the storage section');
  for (const key of declared) assert.ok(key in whoamiSchema.shape, `whoami declares ${key}`);
  assert.equal(
    server.services.accountSections.map((section) => section.key),
    declared,
  );
  const twice = {
    name: 'twice',
    handlers: {},
    accountSections: [{ key: 'storage', show: () => 0 }],
  };
  assert.throws(
    () => new Services(server.services.driver, server.services.config, [...CAPABILITIES, twice]),
    /Two account sections are named storage/,
  );
});

test('a token naming something a capability owns is made only when the caller may reach it, for every scope target declared', async ({
  server,
}) => {
  const targets = CAPABILITIES.flatMap((capability) => capability.scopeTargets ?? []);
  assert.ok(targets.length > 0, 'the workspaces capability checks workspace scopes');
  const scopeSchema = OPERATIONS.create_token.input.shape.scopes;
  const agent = await server.signUp();
  const own = await newWorkspace(server, agent);
  for (const { prefix } of targets) {
    const unseen = `${prefix}${randomUUID()}`;
    assert.ok(scopeSchema.safeParse([unseen]).success, `the protocol accepts ${unseen}`);
    const refused = await callJson(server, 'POST', '/whoami/tokens', agent.api_token, {
      name: 'unseen',
      scopes: [unseen],
    });
    assert.is(refused.status, 404, JSON.stringify(refused.body));
    assert.is((refused.body as { code?: string }).code, 'not_found');
  }
  const made = await callJson(server, 'POST', '/whoami/tokens', agent.api_token, {
    name: 'own',
    scopes: ['read', `workspace:${own}`],
  });
  assert.is(made.status, 201, JSON.stringify(made.body));
});

test('a scope that no capability checks is refused, never let through unchecked', async ({
  server,
}) => {
  const bare = new Services(server.services.driver, server.services.config, []);
  const agent = await server.signUp();
  const principal: Principal = {
    agentId: agent.agent_id,
    name: agent.name,
    agent: { agent_id: agent.agent_id, name: agent.name },
    scopes: new Set(),
    isOperator: false,
    token: null,
    signedBy: null,
    signatureRequired: false,
  };
  await assertScopesReachable(bare, principal, ['read']);
  const error = await assertScopesReachable(bare, principal, [`workspace:${randomUUID()}`]).catch(
    (caught: unknown) => caught,
  );
  assert.match(String(error), /No capability checks the token scope workspace:/);
});

test.run();
