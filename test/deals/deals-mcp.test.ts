import * as assert from 'uvu/assert';
import { callTool, toolProblem } from '../helpers/clients.ts';
import { dealOf, dealRoom, getDeal, rate, type Agreed, type Delivered } from '../helpers/deals.ts';
import { mcpClient, serverSuite } from '../helpers/server-suite.ts';
import type { Agent } from '../helpers/wire-types.ts';

/**
 * Deals through the MCP SDK client answer as they do over HTTP
 * (protocol/documents/deals-protocol.md).
 */
const test = serverSuite('deals through MCP');

test('agree, deliver, rate and get_deal through the MCP SDK client answer as HTTP does', async (context) => {
  const { server } = context;
  const { workspaceId, agents, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  const buyerClient = await mcpClient(context, buyer.api_token);
  const sellerClient = await mcpClient(context, seller.api_token);

  const draft = await callTool(buyerClient, 'get_deal', {
    workspace_id: workspaceId,
    path: 'deal.md',
  });
  assert.not.ok(draft.isError, JSON.stringify(draft));
  assert.equal(
    draft.structuredContent,
    (await getDeal(server, buyer, workspaceId, 'deal.md')).body,
  );

  const first = await callTool(buyerClient, 'agree', {
    workspace_id: workspaceId,
    path: 'deal.md',
    version: at.version,
    sha256: at.sha256,
  });
  assert.not.ok(first.isError, JSON.stringify(first));
  const agreed = first.structuredContent as unknown as Agreed;
  assert.is(agreed.status, 'draft');
  const second = await callTool(sellerClient, 'agree', {
    workspace_id: workspaceId,
    path: 'deal.md',
    version: at.version,
    sha256: at.sha256,
  });
  assert.not.ok(second.isError, JSON.stringify(second));
  assert.equal(second.structuredContent?.status, 'agreed');
  const dealId = agreed.deal_id;

  const delivered = await callTool(sellerClient, 'deliver', {
    deal_id: dealId,
    files: ['deal.md'],
  });
  assert.not.ok(delivered.isError, JSON.stringify(delivered));
  const rated = await callTool(buyerClient, 'rate', {
    deal_id: dealId,
    agent_id: seller.agent_id,
    delivered_can: true,
    accepted_on_need: true,
    score: 5,
  });
  assert.not.ok(rated.isError, JSON.stringify(rated));

  const overHttp = await dealOf(server, buyer, workspaceId, 'deal.md');
  const overMcp = await callTool(sellerClient, 'get_deal', {
    workspace_id: workspaceId,
    path: 'deal.md',
  });
  assert.not.ok(overMcp.isError, JSON.stringify(overMcp));
  assert.equal(overMcp.structuredContent, overHttp, 'get_deal answers the same through both doors');
  assert.equal(
    overHttp.agreements.map((a) => a.receipt),
    [agreed.agreement, second.structuredContent?.agreement],
  );
  assert.equal(
    overHttp.deliveries.map((d) => d.receipt),
    [delivered.structuredContent?.receipt],
  );
  assert.equal(
    overHttp.ratings.map((r) => r.rating_id),
    [rated.structuredContent?.rating_id],
  );
  assert.equal(
    overHttp.deliveries[0]?.files,
    (delivered.structuredContent as unknown as Delivered).files,
  );

  const selfOverMcp = await callTool(buyerClient, 'rate', {
    deal_id: dealId,
    agent_id: buyer.agent_id,
    delivered_can: true,
    accepted_on_need: true,
  });
  assert.ok(selfOverMcp.isError);
  const selfOverHttp = await rate(server, buyer, dealId, buyer);
  assert.equal(toolProblem(selfOverMcp), selfOverHttp.body, 'the same refusal through both doors');
  const staleOverMcp = await callTool(buyerClient, 'agree', {
    workspace_id: workspaceId,
    path: 'deal.md',
    version: 9,
    sha256: at.sha256,
  });
  assert.ok(staleOverMcp.isError);
  assert.is(toolProblem(staleOverMcp).code, 'deal_version_mismatch');
});

test.run();
