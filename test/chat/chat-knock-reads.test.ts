import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { chatSuite, type Knock } from '../helpers/chat.ts';
import { callTool, toolProblem } from '../helpers/clients.ts';
import { callJson as call } from '../helpers/http.ts';
import { mcpClient } from '../helpers/server-suite.ts';
import { postListing, repairIn } from '../helpers/store.ts';
import type { TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';

/**
 * The knock reads over MCP answer as over HTTP, held to protocol/documents/chat-protocol.md
 * (their rules are in chat-knock-reads-rules.test.ts, through the direct door).
 */
const test = chatSuite('knock reads through HTTP and MCP');

/** A knock as the reads show it, with the listing it answers when it names one. */
type ShownKnock = Knock & { listing_id?: string; listing_name?: string | null };

const getKnock = (server: TestServer, agent: { api_token: string }, knockId: string) =>
  call<ShownKnock>(server, 'GET', `/knocks/${knockId}`, agent.api_token);

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
