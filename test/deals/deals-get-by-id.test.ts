import * as assert from 'uvu/assert';
import { callTool, toolProblem } from '../helpers/clients.ts';
import { agreeAll, dealRoom, getDeal, type Deal } from '../helpers/deals.ts';
import { callJson as call } from '../helpers/http.ts';
import { mcpClient, serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import { problemOf, type Agent } from '../helpers/wire-types.ts';

/**
 * get_deal by `deal_id` (GET /deals?deal_id=): the deal list_deals names, read whole, under the
 * same rule as by its file, and no word more to one who may not see it.
 */
const test = serverSuite('deals: get_deal by deal_id');

const byId = (server: TestServer, agent: Agent, dealId: string) =>
  call<Deal>(server, 'GET', `/deals?deal_id=${dealId}`, agent.api_token);

test('a party reads the deal by the deal_id list_deals names, over HTTP and MCP, as by its file', async (context) => {
  const { server } = context;
  const { workspaceId, agents, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  const dealId = await agreeAll(server, [buyer, seller], workspaceId, at);
  const mine = await call<{ deals: { deal_id: string }[] }>(
    server,
    'GET',
    '/deals/mine',
    seller.api_token,
  );
  assert.equal(
    mine.body.deals.map((deal) => deal.deal_id),
    [dealId],
  );

  const shown = await byId(server, seller, dealId);
  assert.is(shown.status, 200, JSON.stringify(shown.body));
  assert.is(shown.body.deal_id, dealId);
  assert.is(shown.body.status, 'agreed');
  assert.equal(shown.body, (await getDeal(server, seller, workspaceId, 'deal.md')).body);

  const client = await mcpClient(context, buyer.api_token);
  const overMcp = await callTool(client, 'get_deal', { deal_id: dealId });
  assert.not.ok(overMcp.isError, JSON.stringify(overMcp));
  assert.equal(overMcp.structuredContent, shown.body);
});

test('a party that left the workspace still reads the deal by deal_id', async ({ server }) => {
  const { workspaceId, agents, at } = await dealRoom(server);
  const [owner, guest] = agents as [Agent, Agent];
  const dealId = await agreeAll(server, [owner, guest], workspaceId, at);
  const left = await call(server, 'POST', `/workspaces/${workspaceId}/leave`, guest.api_token, {});
  assert.is(left.status, 200, JSON.stringify(left.body));
  const shown = await byId(server, guest, dealId);
  assert.is(shown.status, 200, JSON.stringify(shown.body));
  assert.is(shown.body.deal_id, dealId);
});

test('a deal the caller may not see answers the very 404 of a deal that does not exist, over HTTP and MCP', async (context) => {
  const { server } = context;
  const { workspaceId, agents, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  const dealId = await agreeAll(server, [buyer, seller], workspaceId, at);
  const stranger = await server.signUp();

  const hidden = await byId(server, stranger, dealId);
  const missing = await byId(server, stranger, '00000000-0000-4000-8000-000000000000');
  assert.is(hidden.status, 404, JSON.stringify(hidden.body));
  assert.is(problemOf(hidden).code, 'not_found');
  assert.equal(hidden.body, missing.body);

  const client = await mcpClient(context, stranger.api_token);
  const overMcp = await callTool(client, 'get_deal', { deal_id: dealId });
  assert.ok(overMcp.isError);
  assert.equal(toolProblem(overMcp), problemOf(missing));
});

test('both forms at once, or neither, or half of the file form, answer 400 invalid_input naming the field', async (context) => {
  const { server } = context;
  const { workspaceId, agents, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  const dealId = await agreeAll(server, [buyer, seller], workspaceId, at);
  const refusals: [string, string][] = [
    [`/deals?deal_id=${dealId}&workspace_id=${workspaceId}&path=deal.md`, 'deal_id'],
    [`/deals?deal_id=${dealId}&path=deal.md`, 'deal_id'],
    ['/deals', 'workspace_id'],
    [`/deals?workspace_id=${workspaceId}`, 'path'],
    ['/deals?path=deal.md', 'workspace_id'],
    ['/deals?deal_id=not-a-uuid', 'deal_id'],
  ];
  for (const [path, field] of refusals) {
    const refused = await call(server, 'GET', path, buyer.api_token);
    assert.is(refused.status, 400, `${path}: ${JSON.stringify(refused.body)}`);
    assert.is(problemOf(refused).code, 'invalid_input', path);
    assert.is(problemOf(refused).field, field, path);
  }
  const still = await byId(server, buyer, dealId);
  assert.is(still.status, 200, 'the refusals changed nothing');

  const client = await mcpClient(context, buyer.api_token);
  const overMcp = await callTool(client, 'get_deal', {
    deal_id: dealId,
    workspace_id: workspaceId,
    path: 'deal.md',
  });
  assert.ok(overMcp.isError);
  assert.is(toolProblem(overMcp).code, 'invalid_input');
});

test.run();
