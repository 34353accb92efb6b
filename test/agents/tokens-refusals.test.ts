import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { mcpClient, serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import {
  createToken,
  listTokens,
  madeToken,
  revokeToken,
  rotateToken,
  toolRefusal,
  whoamiAs,
} from '../helpers/tokens.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * The token operations' refusals: bad input answers 400 with a stable code and writes nothing,
 * the 51st live token is refused (also when 60 are asked for at once), and a token whose
 * checksum does not hold is refused by its form alone.
 */
const test = serverSuite('token operations refuse bad input, too many tokens and forgeries');

/**
 * The agent's live tokens as list_tokens shows them, to compare before and after; without
 * `last_used_at`, which the service notes in the background after a use (at most once a minute).
 */
const snapshot = async (server: TestServer, token: string) =>
  JSON.stringify(
    (await listTokens(server, token)).map((line) => ({ ...line, last_used_at: undefined })),
  );

test('create_token refuses bad input with 400 and its code, and makes no token', async ({
  server,
}) => {
  const agent = await server.signUp();
  const first = await newWorkspace(server, agent);
  const second = await newWorkspace(server, agent);
  const before = await snapshot(server, agent.api_token);
  const cases: [what: string, body: Record<string, unknown>, code: string, field: string][] = [
    ['an unknown scope', { name: 'n', scopes: ['write'] }, 'invalid_input', 'scopes.0'],
    ['a scope in capitals', { name: 'n', scopes: ['READ'] }, 'invalid_input', 'scopes.0'],
    [
      'a workspace scope without a UUID',
      { name: 'n', scopes: ['workspace:*'] },
      'invalid_input',
      'scopes.0',
    ],
    [
      'two workspace scopes',
      { name: 'n', scopes: [`workspace:${first}`, `workspace:${second}`] },
      'invalid_input',
      'scopes',
    ],
    [
      'three scopes',
      { name: 'n', scopes: ['read', 'read', `workspace:${first}`] },
      'invalid_input',
      'scopes',
    ],
    ['expires_in_hours 0', { name: 'n', expires_in_hours: 0 }, 'invalid_input', 'expires_in_hours'],
    [
      'a negative expires_in_hours',
      { name: 'n', expires_in_hours: -1 },
      'invalid_input',
      'expires_in_hours',
    ],
    [
      'expires_in_hours over a year',
      { name: 'n', expires_in_hours: 8761 },
      'invalid_input',
      'expires_in_hours',
    ],
    [
      'expires_in_hours as text',
      { name: 'n', expires_in_hours: '2' },
      'invalid_input',
      'expires_in_hours',
    ],
    ['an empty name', { name: '' }, 'invalid_input', 'name'],
    ['a name of 65 characters', { name: 'x'.repeat(65) }, 'invalid_input', 'name'],
    ['no name', {}, 'invalid_input', 'name'],
    ['an unknown field', { name: 'n', admin: true }, 'unknown_field', 'admin'],
  ];
  for (const [what, body, code, field] of cases) {
    const refused = await createToken(server, agent.api_token, body);
    assert.is(refused.status, 400, `${what}: ${JSON.stringify(refused.body)}`);
    assert.is(refused.body.code, code, what);
    const named = [
      refused.body.field,
      ...(refused.body.problems ?? []).map((problem) => problem.field),
      ...((refused.body as { fields?: string[] }).fields ?? []),
    ];
    assert.ok(named.includes(field), `${what} names ${field}: ${JSON.stringify(refused.body)}`);
  }
  assert.is(await snapshot(server, agent.api_token), before, 'no token was made');
  // At the edges it takes them: 64 characters, a year.
  await madeToken(server, agent.api_token, { name: 'y'.repeat(64), expires_in_hours: 8760 });
});

test('rotate_token refuses a grace over 24 hours or below 0, or an unknown field, and the old token keeps working', async ({
  server,
}) => {
  const agent = await server.signUp();
  const before = await snapshot(server, agent.api_token);
  for (const [body, code] of [
    [{ grace_hours: 24.5 }, 'invalid_input'],
    [{ grace_hours: -1 }, 'invalid_input'],
    [{ grace_hours: 'soon' }, 'invalid_input'],
    [{ grace_hours: 1, name: 'renamed' }, 'unknown_field'],
  ] as const) {
    const refused = await rotateToken(server, agent.api_token, body);
    assert.is(refused.status, 400, JSON.stringify(refused.body));
    assert.is(refused.body.code, code, JSON.stringify(body));
  }
  assert.is(await snapshot(server, agent.api_token), before, 'no token was made or retired');
  assert.is((await whoamiAs(server, agent.api_token)).status, 200);
});

test('revoke_token refuses an id that is not a UUID with 400, and revokes nothing', async ({
  server,
}) => {
  const agent = await server.signUp();
  const before = await snapshot(server, agent.api_token);
  const refused = await revokeToken(server, agent.api_token, 'not-a-uuid');
  assert.is(refused.status, 400, JSON.stringify(refused.body));
  assert.is(refused.body.code, 'invalid_input');
  assert.is(await snapshot(server, agent.api_token), before);
});

test('the 51st live token is refused with 409 limit_reached until one is revoked', async ({
  server,
}) => {
  const agent = await server.signUp();
  const made = [];
  // The sign-up token counts: 49 more make 50.
  for (let i = 1; i <= 49; i++)
    made.push(await madeToken(server, agent.api_token, { name: `t${i}` }));
  const refused = await createToken(server, agent.api_token, { name: 'one too many' });
  assert.is(refused.status, 409, JSON.stringify(refused.body));
  assert.is(refused.body.code, 'limit_reached');
  assert.is(refused.body.limit, 50);
  assert.is((await listTokens(server, agent.api_token)).length, 50);

  const rotated = await rotateToken(server, made[0]?.api_token as string);
  assert.is(rotated.status, 201, 'rotating at once is not refused for the limit');
  assert.is((await revokeToken(server, agent.api_token, made[1]?.token_id as string)).status, 200);
  assert.is((await createToken(server, agent.api_token, { name: 'room again' })).status, 201);
});

test('rotating the same token again and again within its grace does not pass the limit', async ({
  server,
}) => {
  const agent = await server.signUp();
  const old = await madeToken(server, agent.api_token, { name: 'rotated in grace' });
  const statuses: number[] = [];
  // Each rotation mints a token for good; the old one, in its grace, could ask again.
  for (let i = 0; i < 55; i++) {
    statuses.push((await rotateToken(server, old.api_token, { grace_hours: 24 })).status);
  }
  const live = await listTokens(server, agent.api_token);
  assert.ok(live.length <= 51, `${live.length} live tokens after ${JSON.stringify(statuses)}`);
});

test('60 create_token calls at once never leave more than 50 live tokens', async ({ server }) => {
  const agent = await server.signUp();
  const answers = await Promise.all(
    Array.from({ length: 60 }, (_, i) => createToken(server, agent.api_token, { name: `c${i}` })),
  );
  const statuses = answers.map((answer) => answer.status);
  assert.ok(
    statuses.every((status) => status === 201 || status === 409),
    JSON.stringify(statuses),
  );
  const live = await listTokens(server, agent.api_token);
  assert.ok(live.length <= 50, `${live.length} live tokens`);
  assert.is(live.length, 1 + statuses.filter((status) => status === 201).length);
  // Every token answered as made works: none was made beyond the limit and then dropped.
  const working = answers.filter((answer) => answer.status === 201).slice(0, 5);
  for (const answer of working) {
    assert.is((await whoamiAs(server, answer.body.api_token)).status, 200);
  }
});

test('a token with our prefix but a checksum that does not hold is refused as malformed, unlike an unknown one', async (context) => {
  const { server } = context;
  const real = newToken();
  const last = real.at(-1) === 'A' ? 'B' : 'A';
  const forged = `${real.slice(0, -1)}${last}`;
  const refused = await whoamiAs(server, forged);
  assert.is(refused.status, 401, JSON.stringify(refused.body));
  assert.is(refused.body.code, 'unauthorized');
  assert.match(refused.body.detail, /malformed/);
  // Only a lookup can say `unknown`: the forgery never got that far, and says `malformed`.
  assert.is(refused.body.reason, 'malformed');

  const unknown = await whoamiAs(server, real);
  assert.is(unknown.status, 401);
  assert.is(unknown.body.reason, 'unknown', 'a well-formed token is looked up');

  const anonymous = await mcpClient(context, '');
  const overMcp = await toolRefusal(anonymous, 'whoami', { api_token: forged });
  assert.is(overMcp?.code, 'unauthorized');
  assert.match(overMcp?.detail ?? '', /malformed/);
  assert.is(overMcp?.reason, 'malformed');
});

test.run();
