import * as assert from 'uvu/assert';
import { attackSuite, meaning, scope, sql, type Attack } from '../helpers/index-attacks.ts';
import { newWorkspace, saveFile, type TestAgent } from '../helpers/workspaces.ts';

/**
 * Attacks on read-only SQL over the index (test/helpers/index-attacks.ts says how each is run
 * and what stops it) that go after rows out of the caller's reach: other agents' private files,
 * a workspace it left, and failing expressions that would tell about rows it cannot see.
 */

const ATTACKS: Attack[] = [
  {
    tries: "Reading another agent's private files",
    sql: 'select path from files',
    stop: scope([]),
  },
  {
    tries: 'Reading every file in scope public when only private files exist',
    sql: 'select * from files',
    scope: 'public',
    stop: scope([]),
  },
  {
    tries: 'Reading every version in scope public',
    sql: 'select path from file_versions',
    scope: 'public',
    stop: scope([]),
  },
  {
    tries: "Counting the versions of another agent's workspace by its id",
    sql: 'select count(*) from file_versions where workspace_id = $1::uuid',
    params: (world) => [world.victimWorkspace],
    stop: scope([[0]]),
  },
  {
    tries: "Reading another agent's place and price values",
    sql: 'select axis, value from axis_values',
    stop: scope([]),
  },
  {
    tries: 'Reading private files in scope store',
    sql: 'select path from files',
    scope: 'store',
    stop: scope([]),
  },
  {
    tries: "Dividing by another agent's secret, to learn it from the error",
    sql: "select count(*) from files where 1 / ((fields->>'secret')::int) = 1",
    stop: scope([[0]]),
  },
  {
    tries: "Casting another agent's name to int, to read it in the error",
    sql: "select count(*) from file_versions where (fields->>'name')::int = 1",
    stop: scope([[0]]),
  },
  {
    tries: "Dividing by another agent's price in axis_values",
    sql: 'select count(*) from axis_values where 1 / (value::int) = 1',
    stop: scope([[0]]),
  },
];

const test = attackSuite('attacks on read-only SQL over the index: rows out of reach', ATTACKS);

test("A member's query no longer reaches a workspace it left", async ({ server }) => {
  const owner = await server.signUp();
  const member = await server.signUp();
  const workspace = await newWorkspace(server, owner);
  const invite = await server.post(`/workspaces/${workspace}/invites`, {}, owner.api_token);
  assert.is(invite.status, 201, await invite.clone().text());
  const { invite_token } = (await invite.json()) as { invite_token: string };
  const joined = await server.post('/invites/redeem', { invite_token }, member.api_token);
  assert.is(joined.status, 200, await joined.clone().text());
  await saveFile(server, owner, workspace, 'plans.md', '---\nstage: draft\n---\nOur plans.\n');

  const files = { sql: 'select path from files' };
  const versions = { sql: 'select path, version from file_versions' };
  assert.equal((await sql(server, member, files)).body.rows, [['plans.md']]);
  assert.equal((await sql(server, member, versions)).body.rows, [['plans.md', 1]]);

  const left = await server.post(`/workspaces/${workspace}/leave`, {}, member.api_token);
  assert.is(left.status, 200, await left.clone().text());
  assert.equal(await left.json(), { workspace_id: workspace, left: true });

  assert.equal((await sql(server, member, files)).body.rows, []);
  assert.equal((await sql(server, member, versions)).body.rows, []);
  assert.equal((await sql(server, owner, files)).body.rows, [['plans.md']]);
});

test('A failing expression over rows out of reach tells nothing about them', async ({ server }) => {
  const owner = await server.signUp();
  const outsider = await server.signUp();
  const workspace = await newWorkspace(server, owner);
  const header = (secret: number) =>
    `---\nname: hunter2\nsecret: ${secret}\nprice: ${secret}\n---\nNotes.\n`;
  const probes = [
    "select count(*) from files where 1 / ((fields->>'secret')::int) = 1",
    "select count(*) from file_versions where 1 / ((fields->>'secret')::int) = 1",
    "select count(*) from file_versions where (fields->>'secret')::int = 1 / ((fields->>'secret')::int)",
    "select count(*) from files where (fields->>'name')::int = 1",
    'select count(*) from axis_values where 1 / (value::int) = 1',
    "select path from files where (fields->>'secret')::int = 0",
  ];
  const probeAll = async (agent: TestAgent) => {
    const answers = [];
    for (const probe of probes) answers.push(meaning(await sql(server, agent, { sql: probe })));
    return answers;
  };

  await saveFile(server, owner, workspace, 'vault.md', header(0));
  // The probes do fail on the row itself: the owner, who reaches it, is refused.
  const ownerAnswer = await sql(server, owner, { sql: probes[0] as string });
  assert.is(ownerAnswer.status, 400, JSON.stringify(ownerAnswer.body));
  assert.match(ownerAnswer.body.detail ?? '', /division by zero/);
  const whileZero = await probeAll(outsider);

  await saveFile(server, owner, workspace, 'vault.md', header(1));
  const whileOne = await probeAll(outsider);

  assert.equal(whileZero, whileOne);
  const nothing = { status: 200, code: undefined, detail: undefined, truncated: false };
  assert.equal(whileZero, [
    { ...nothing, rows: [[0]] },
    { ...nothing, rows: [[0]] },
    { ...nothing, rows: [[0]] },
    { ...nothing, rows: [[0]] },
    { ...nothing, rows: [[0]] },
    { ...nothing, rows: [] },
  ]);
});

test.run();
