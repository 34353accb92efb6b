import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { newChanges, ofType } from '../helpers/changes.ts';
import {
  answerKnock,
  chatSuite,
  knockAgent,
  knockOn,
  KNOCK_LIFE_MS,
  listKnocks,
  moveClock,
  publicOwner,
  type Knock,
} from '../helpers/chat.ts';
import { callTool, toolProblem } from '../helpers/clients.ts';
import { callJson as call } from '../helpers/http.ts';
import { mcpClient } from '../helpers/server-suite.ts';
import { postListing, repairIn } from '../helpers/store.ts';
import type { TestServer } from '../helpers/server.ts';
import { problemOf, type Agent } from '../helpers/wire-types.ts';

/**
 * The knock reads, held to protocol/documents/chat-protocol.md: one knock by its id (its knocker
 * and its target only), one's knock settings (and in whoami), and a knock that names the listing
 * it answers (one of the knocked party's, else 422 listing_not_theirs and nothing sent).
 */
const test = chatSuite('knock reads through HTTP and MCP');

type Settings = { direct_knocks: string };
/** A knock as the reads show it, with the listing it answers when it names one. */
type ShownKnock = Knock & { listing_id?: string; listing_name?: string | null };

const getKnock = (server: TestServer, agent: { api_token: string }, knockId: string) =>
  call<ShownKnock>(server, 'GET', `/knocks/${knockId}`, agent.api_token);

const getSettings = (server: TestServer, agent: Agent) =>
  call<Settings>(server, 'GET', '/whoami/knock-settings', agent.api_token);

const whoami = (server: TestServer, agent: Agent) =>
  call<{ knock_settings: Settings; service_version: string }>(
    server,
    'GET',
    '/whoami',
    agent.api_token,
  );

/** Knocks `body` on the workspace (a note, perhaps a listing_id). */
const knockWith = (
  server: TestServer,
  agent: Agent,
  workspaceId: string,
  body: Record<string, unknown>,
) =>
  call<{ knock_id: string }>(
    server,
    'POST',
    `/workspaces/${workspaceId}/knock`,
    agent.api_token,
    body,
  );

const knockAgentWith = (
  server: TestServer,
  agent: Agent,
  target: Agent,
  body: Record<string, unknown>,
) =>
  call<{ knock_id: string }>(
    server,
    'POST',
    `/agents/${target.agent_id}/knock`,
    agent.api_token,
    body,
  );

/** A listing posted by `agent` (in `workspaceId` when given); answers its id and workspace. */
async function listingOf(server: TestServer, agent: Agent, place: string, workspaceId?: string) {
  const posted = await postListing(
    server,
    agent,
    repairIn(place, workspaceId ? { workspace_id: workspaceId } : {}),
  );
  assert.ok(posted.status === 201, JSON.stringify(posted.body));
  return { listingId: posted.body.listing_id, workspaceId: posted.body.workspace_id };
}

test('get_knock shows a knock to its knocker and its target exactly as list_knocks does, with its status now', async ({
  server,
  clock,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  const knocked = await knockOn(server, knocker, workspaceId, 'about your workspace');
  assert.is(knocked.status, 201);
  const knockId = knocked.body.knock_id;

  const [listed] = (await listKnocks(server, owner)).body.knocks;
  for (const reader of [owner, knocker]) {
    const shown = await getKnock(server, reader, knockId);
    assert.is(shown.status, 200, JSON.stringify(shown.body));
    assert.equal(shown.body, listed);
  }
  assert.is(listed?.status, 'pending');
  assert.not.ok('listing_id' in (listed ?? {}), 'no listing named, none shown');

  const direct = await knockAgent(server, knocker, owner, 'directly');
  assert.is((await getKnock(server, owner, direct.body.knock_id)).body.workspace_id, null);

  assert.is((await answerKnock(server, owner, knockId, 'decline')).status, 200);
  assert.is((await getKnock(server, knocker, knockId)).body.status, 'declined');

  await moveClock(server, clock, KNOCK_LIFE_MS + 1);
  assert.is(
    (await getKnock(server, knocker, direct.body.knock_id)).body.status,
    'expired',
    'a pending knock past its time shows expired',
  );
});

test('get_knock answers anyone but its knocker and target the same 404 as a knock that does not exist', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const knocker = await server.signUp();
  const stranger = await server.signUp();
  const knockId = (await knockOn(server, knocker, workspaceId, 'hello')).body.knock_id;

  const hidden = await getKnock(server, stranger, knockId);
  const missing = await getKnock(server, stranger, randomUUID());
  assert.is(hidden.status, 404);
  assert.is(problemOf(hidden).code, 'not_found');
  assert.equal(hidden.body, missing.body, 'nothing tells a hidden knock from a missing one');
  assert.equal(
    (await getKnock(server, owner, randomUUID())).body,
    missing.body,
    'the same for the target',
  );

  const noToken = await call(server, 'GET', `/knocks/${knockId}`, null);
  assert.is(noToken.status, 401);
  const badId = await getKnock(server, owner, 'not-a-uuid');
  assert.is(badId.status, 400);
  assert.is(problemOf(badId).code, 'invalid_input');
});

test('get_knock_settings answers what set_knock_settings set, and whoami shows the same as knock_settings', async ({
  server,
}) => {
  const agent = await server.signUp();
  assert.equal((await getSettings(server, agent)).body, { direct_knocks: 'everyone' });
  const before = await whoami(server, agent);
  assert.equal(before.body.knock_settings, { direct_knocks: 'everyone' });
  assert.type(before.body.service_version, 'string', 'whoami keeps its fields');

  const set = await call<Settings>(server, 'PUT', '/whoami/knock-settings', agent.api_token, {
    direct_knocks: 'nobody',
  });
  assert.is(set.status, 200);
  const read = await getSettings(server, agent);
  assert.is(read.status, 200);
  assert.equal(read.body, set.body);
  assert.equal((await whoami(server, agent)).body.knock_settings, { direct_knocks: 'nobody' });

  const other = await server.signUp();
  assert.equal(
    (await getSettings(server, other)).body,
    { direct_knocks: 'everyone' },
    "one's own settings only",
  );
  const extra = await call(
    server,
    'GET',
    '/whoami/knock-settings?direct_knocks=nobody',
    agent.api_token,
  );
  assert.is(extra.status, 400);
  assert.is(problemOf(extra).code, 'unknown_field');
  assert.is((await call(server, 'GET', '/whoami/knock-settings', null)).status, 401);
});

test('a knock naming a listing in the workspace keeps it: knock.received, list_knocks and get_knock show its id and name', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const { listingId } = await listingOf(server, owner, 'Berlin', workspaceId);
  await newChanges(server, owner);
  const knocker = await server.signUp();
  const knocked = await knockWith(server, knocker, workspaceId, {
    note: 'I need this',
    listing_id: listingId,
  });
  assert.is(knocked.status, 201, JSON.stringify(knocked.body));

  const [received] = ofType(await newChanges(server, owner), 'knock.received');
  assert.is(received?.data.listing_id, listingId);
  assert.is(received?.data.listing_name, 'Bicycle repair in Berlin');

  const shown = await getKnock(server, owner, knocked.body.knock_id);
  assert.is(shown.body.listing_id, listingId);
  assert.is(shown.body.listing_name, 'Bicycle repair in Berlin');
  assert.equal((await listKnocks(server, owner)).body.knocks, [shown.body]);
  assert.equal((await listKnocks(server, knocker, '?direction=outgoing')).body.knocks, [
    shown.body,
  ]);

  // The listing renamed: the knock shows its name now; deleted: the id stays, the name is null.
  const renamed = await postListing(server, owner, {
    ...repairIn('Berlin', { name: 'Bicycles mended' }),
    listing_id: listingId,
  });
  assert.is(renamed.status, 200, JSON.stringify(renamed.body));
  assert.is(
    (await getKnock(server, knocker, knocked.body.knock_id)).body.listing_name,
    'Bicycles mended',
  );
  const deleted = await call(server, 'DELETE', `/listings/${listingId}`, owner.api_token);
  assert.is(deleted.status, 200, JSON.stringify(deleted.body));
  const after = await getKnock(server, knocker, knocked.body.knock_id);
  assert.is(after.body.listing_id, listingId);
  assert.is(after.body.listing_name, null);
});

test('a direct knock naming a listing the agent wrote keeps it', async ({ server }) => {
  const target = await server.signUp();
  const { listingId } = await listingOf(server, target, 'Paris');
  await newChanges(server, target);
  const knocker = await server.signUp();
  const knocked = await knockAgentWith(server, knocker, target, {
    note: 'about your repairs',
    listing_id: listingId,
  });
  assert.is(knocked.status, 201, JSON.stringify(knocked.body));
  const [received] = ofType(await newChanges(server, target), 'knock.received');
  assert.equal(
    [received?.data.listing_id, received?.data.listing_name],
    [listingId, 'Bicycle repair in Paris'],
  );
  const shown = await getKnock(server, knocker, knocked.body.knock_id);
  assert.equal(
    [shown.body.listing_id, shown.body.listing_name],
    [listingId, 'Bicycle repair in Paris'],
  );
});

test('a listing_id that is unknown, deleted, in another workspace or by another agent answers 422 listing_not_theirs and sends nothing', async ({
  server,
}) => {
  const { owner, workspaceId } = await publicOwner(server);
  const other = await server.signUp();
  const inOwnWorkspace = await listingOf(server, owner, 'Rome');
  assert.ok(inOwnWorkspace.workspaceId !== workspaceId);
  const byOther = await listingOf(server, other, 'Oslo');
  const gone = await listingOf(server, owner, 'Lima', workspaceId);
  assert.is(
    (await call(server, 'DELETE', `/listings/${gone.listingId}`, owner.api_token)).status,
    200,
  );
  await newChanges(server, owner);
  const knocker = await server.signUp();

  const refusals = [
    knockWith(server, knocker, workspaceId, { note: 'x', listing_id: randomUUID() }),
    knockWith(server, knocker, workspaceId, { note: 'x', listing_id: gone.listingId }),
    knockWith(server, knocker, workspaceId, { note: 'x', listing_id: inOwnWorkspace.listingId }),
    knockWith(server, knocker, workspaceId, { note: 'x', listing_id: byOther.listingId }),
    knockAgentWith(server, knocker, owner, { note: 'x', listing_id: byOther.listingId }),
    knockAgentWith(server, knocker, owner, { note: 'x', listing_id: gone.listingId }),
    knockAgentWith(server, knocker, other, { note: 'x', listing_id: inOwnWorkspace.listingId }),
  ];
  for (const refused of await Promise.all(refusals)) {
    assert.is(refused.status, 422, JSON.stringify(refused.body));
    assert.is(problemOf(refused).code, 'listing_not_theirs');
    assert.is(problemOf(refused).field, 'listing_id');
  }
  const notUuid = await knockWith(server, knocker, workspaceId, { note: 'x', listing_id: 'abc' });
  assert.is(notUuid.status, 400);
  assert.is(problemOf(notUuid).code, 'invalid_input');

  assert.equal((await listKnocks(server, knocker, '?direction=outgoing')).body.knocks, []);
  assert.equal(ofType(await newChanges(server, owner), 'knock.received'), []);
  assert.equal(ofType(await newChanges(server, other), 'knock.received'), []);
  // Refusals are not knocks: the ones that fit still go (the hourly limit counts none of these).
  const fits = await knockWith(server, knocker, workspaceId, { note: 'x' });
  assert.is(fits.status, 201, JSON.stringify(fits.body));
});

test('get_knock, get_knock_settings, whoami and a knock naming a listing answer over MCP as over HTTP', async (context) => {
  const { server } = context;
  const target = await server.signUp();
  const { listingId } = await listingOf(server, target, 'Madrid');
  const knocker = await server.signUp();
  const stranger = await server.signUp();
  const knockerClient = await mcpClient(context, knocker.api_token);
  const targetClient = await mcpClient(context, target.api_token);
  const strangerClient = await mcpClient(context, stranger.api_token);

  const refused = await callTool(knockerClient, 'knock_agent', {
    agent_id: target.agent_id,
    note: 'hi',
    listing_id: randomUUID(),
  });
  assert.ok(refused.isError);
  assert.is(toolProblem(refused).code, 'listing_not_theirs');

  const knocked = await callTool(knockerClient, 'knock_agent', {
    agent_id: target.agent_id,
    note: 'hi',
    listing_id: listingId,
  });
  assert.not.ok(knocked.isError, JSON.stringify(knocked));
  const knockId = (knocked.structuredContent as { knock_id: string }).knock_id;

  const shown = await callTool(targetClient, 'get_knock', { knock_id: knockId });
  assert.not.ok(shown.isError, JSON.stringify(shown));
  assert.equal(shown.structuredContent, (await getKnock(server, target, knockId)).body);
  assert.is(shown.structuredContent?.listing_id, listingId);

  const hidden = await callTool(strangerClient, 'get_knock', { knock_id: knockId });
  assert.ok(hidden.isError);
  assert.equal(toolProblem(hidden), (await getKnock(server, stranger, knockId)).body);

  await callTool(targetClient, 'set_knock_settings', { direct_knocks: 'nobody' });
  const settings = await callTool(targetClient, 'get_knock_settings', {});
  assert.not.ok(settings.isError, JSON.stringify(settings));
  assert.equal(settings.structuredContent, { direct_knocks: 'nobody' });
  const me = await callTool(targetClient, 'whoami', {});
  assert.equal(me.structuredContent?.knock_settings, { direct_knocks: 'nobody' });
});

test.run();
