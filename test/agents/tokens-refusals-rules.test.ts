import { workspaceOf } from '../helpers/direct-workspaces.ts';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { liveTokenIds, tokenWorks } from '../helpers/direct-agents.ts';
import { directDoor, type DirectDoor, type DirectInput } from '../helpers/direct.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The token operations' refusals, through the direct door: bad input is refused with a stable
 * code and writes nothing, and the 51st live token is refused (also when 60 are asked for at
 * once). A forged token at the doors: tokens-refusals.test.ts.
 */
const test = suite<{ server: TestServer; door: DirectDoor }>(
  'token operations refuse bad input and too many tokens',
);

test.before(async (context) => {
  context.server = await startTestServer();
  context.door = directDoor(context.server.services);
});
test.after(async ({ server }) => {
  await server.close();
});

/**
 * The agent's live tokens as list_tokens shows them, to compare before and after; without
 * `last_used_at`, which the service notes in the background after a use (at most once a minute).
 */
const snapshot = async (door: DirectDoor, token: string) =>
  JSON.stringify(
    (await door.call('list_tokens', {}, token)).tokens.map((line) => ({
      ...line,
      last_used_at: undefined,
    })),
  );

/** Input as a caller may send it, well-formed or not. */
const loose = <N extends 'create_token' | 'rotate_token'>(_name: N, input: object) =>
  input as DirectInput<N>;

test('create_token refuses bad input with 400 and its code, and makes no token', async ({
  door,
}) => {
  const agent = await door.signUp();
  const first = await workspaceOf(door, agent);
  const second = await workspaceOf(door, agent);
  const before = await snapshot(door, agent.api_token);
  const cases: [what: string, input: Record<string, unknown>, code: string, field: string][] = [
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
    ['the same scope twice', { name: 'n', scopes: ['read', 'read'] }, 'invalid_input', 'scopes'],
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
  for (const [what, input, code, field] of cases) {
    const refused = await door.refusal(
      'create_token',
      loose('create_token', input),
      agent.api_token,
    );
    assert.is(refused.code, code, `${what}: ${refused.message}`);
    const extra = refused.extra as {
      field?: string;
      issues?: { field: string }[];
      fields?: string[];
    };
    const named = [
      extra.field,
      ...(extra.issues ?? []).map((issue) => issue.field),
      ...(extra.fields ?? []),
    ];
    assert.ok(named.includes(field), `${what} names ${field}: ${JSON.stringify(extra)}`);
  }
  assert.is(await snapshot(door, agent.api_token), before, 'no token was made');
  // At the edges it takes them: 64 characters, a year.
  await door.call(
    'create_token',
    { name: 'y'.repeat(64), expires_in_hours: 8760 },
    agent.api_token,
  );
});

test('rotate_token refuses a grace over 24 hours or below 0, or an unknown field, and the old token keeps working', async ({
  door,
}) => {
  const agent = await door.signUp();
  const before = await snapshot(door, agent.api_token);
  for (const [input, code] of [
    [{ grace_hours: 24.5 }, 'invalid_input'],
    [{ grace_hours: -1 }, 'invalid_input'],
    [{ grace_hours: 'soon' }, 'invalid_input'],
    [{ grace_hours: 1, name: 'renamed' }, 'unknown_field'],
  ] as const) {
    const refused = await door.refusal(
      'rotate_token',
      loose('rotate_token', input),
      agent.api_token,
    );
    assert.is(refused.code, code, JSON.stringify(input));
  }
  assert.is(await snapshot(door, agent.api_token), before, 'no token was made or retired');
  assert.ok(await tokenWorks(door, agent.api_token));
});

test('revoke_token refuses an id that is not a UUID with 400, and revokes nothing', async ({
  door,
}) => {
  const agent = await door.signUp();
  const before = await snapshot(door, agent.api_token);
  const refused = await door.refusal('revoke_token', { token_id: 'not-a-uuid' }, agent.api_token);
  assert.is(refused.code, 'invalid_input');
  assert.is(await snapshot(door, agent.api_token), before);
});

test('the 51st live token is refused with 409 limit_reached until one is revoked', async ({
  door,
}) => {
  const agent = await door.signUp();
  const made = [];
  // The sign-up token counts: 49 more make 50.
  for (let i = 1; i <= 49; i++)
    made.push(await door.call('create_token', { name: `t${i}` }, agent.api_token));
  const refused = await door.refusal('create_token', { name: 'one too many' }, agent.api_token);
  assert.is(refused.code, 'limit_reached');
  assert.is(refused.extra.limit, 50);
  assert.is((await liveTokenIds(door, agent.api_token)).length, 50);

  // Rotating at once is not refused for the limit.
  await door.call('rotate_token', {}, made[0]?.api_token as string);
  await door.call('revoke_token', { token_id: made[1]?.token_id as string }, agent.api_token);
  await door.call('create_token', { name: 'room again' }, agent.api_token);
});

test('rotating the same token again and again within its grace does not pass the limit', async ({
  door,
}) => {
  const agent = await door.signUp();
  const old = await door.call('create_token', { name: 'rotated in grace' }, agent.api_token);
  const answers: string[] = [];
  // Each rotation mints a token for good; the old one, in its grace, could ask again.
  for (let i = 0; i < 55; i++) {
    answers.push(
      await door.call('rotate_token', { grace_hours: 24 }, old.api_token).then(
        () => 'rotated',
        (error: { code?: string }) => String(error.code),
      ),
    );
  }
  const live = await liveTokenIds(door, agent.api_token);
  assert.ok(live.length <= 51, `${live.length} live tokens after ${JSON.stringify(answers)}`);
});

test('60 create_token calls at once never leave more than 50 live tokens', async ({ door }) => {
  const agent = await door.signUp();
  const answers = await Promise.allSettled(
    Array.from({ length: 60 }, (_, i) =>
      door.call('create_token', { name: `c${i}` }, agent.api_token),
    ),
  );
  const outcomes = answers.map((answer) =>
    answer.status === 'fulfilled' ? 'made' : (answer.reason as { code?: string }).code,
  );
  assert.ok(
    outcomes.every((outcome) => outcome === 'made' || outcome === 'limit_reached'),
    JSON.stringify(outcomes),
  );
  const live = await liveTokenIds(door, agent.api_token);
  assert.ok(live.length <= 50, `${live.length} live tokens`);
  assert.is(live.length, 1 + outcomes.filter((outcome) => outcome === 'made').length);
  // Every token answered as made works: none was made beyond the limit and then dropped.
  const working = answers.flatMap((answer) =>
    answer.status === 'fulfilled' ? [answer.value] : [],
  );
  for (const made of working.slice(0, 5)) {
    assert.ok(await tokenWorks(door, made.api_token));
  }
});

test.run();
