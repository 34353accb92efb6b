import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { newChanges, ofType } from '../helpers/changes.ts';
import { callTool, toolProblem } from '../helpers/clients.ts';
import {
  agree,
  agreeAll,
  dealOf,
  dealRoom,
  dealText,
  deliver,
  getDeal,
  lineOf,
  listed,
  rate,
  reputationOf,
} from '../helpers/deals.ts';
import { callJson as call } from '../helpers/http.ts';
import { mcpClient, serverSuite, type ServerSuiteContext } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import type { Agent, Json, Problem } from '../helpers/wire-types.ts';
import { joinWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * Nobody is pushed out of an agreed deal (issue 17, item 6; deals-protocol.md, "Parties for
 * good"): a party that brings a newcomer into the workspace cannot agree a new version with it
 * and drop the other party; a party dropped with its own agreement, or one that left the
 * workspace, still rates, is rated and is counted. And a deal the caller may not see answers
 * the same bytes as one that does not exist (protocol/documents/protocol.md). Through HTTP and MCP.
 */

const test = serverSuite('no party is ejected from an agreed deal');

/** Calls the MCP tool `name` as `agent`, through a client of its own. */
async function mcpTool(context: ServerSuiteContext, agent: Agent, name: string, args: Json) {
  return callTool(await mcpClient(context, agent.api_token, 'deals-ejection-test'), name, args);
}

/**
 * A (the owner) and C agree to version 1 of `deal.md`; then A brings S into the workspace, saves
 * version 2 naming A and S only, and both agree to it.
 */
async function ejectionAttempt(server: TestServer) {
  const { workspaceId, agents, at } = await dealRoom(server);
  const [a, c] = agents as [Agent, Agent];
  const dealId = await agreeAll(server, [a, c], workspaceId, at);
  const s = await server.signUp();
  await joinWorkspace(server, a, s, workspaceId);
  await newChanges(server, c);
  const v2 = dealText('Logo, now with S', [a, s].map(lineOf), 'C is out.');
  await saveFile(server, a, workspaceId, 'deal.md', v2);
  const at2 = await listed(server, a, workspaceId, 'deal.md');
  for (const party of [a, s]) {
    const agreed = await agree(server, party, workspaceId, 'deal.md', at2);
    assert.is(agreed.status, 200, JSON.stringify(agreed.body));
    assert.is(agreed.body.status, 'agreed', 'still agreed: to version 1');
  }
  return { workspaceId, dealId, a, c, s, at, at2 };
}

test('a party and a newcomer it brought in agree a version without the other party: what was agreed stands, the other party rates and stays counted, the newcomer cannot rate', async (context) => {
  const { server } = context;
  const { workspaceId, dealId, a, c, s, at, at2 } = await ejectionAttempt(server);

  const deal = await dealOf(server, c, workspaceId, 'deal.md');
  assert.is(deal.status, 'agreed');
  assert.equal([deal.agreed?.version, deal.agreed?.sha256], [1, at.sha256]);
  assert.equal(deal.agreed?.parties, [a.agent_id, c.agent_id]);
  assert.equal(deal.round, {
    version: 2,
    sha256: at2.sha256,
    parties: [a.agent_id, s.agent_id],
    agreed: [a.agent_id, s.agent_id],
  });
  assert.equal(deal.former_parties, []);
  const heard = ofType(await newChanges(server, c), 'deal.agreed');
  assert.equal(
    heard.map((change) => [change.data.version, change.data.agent_id, change.data.agreed]),
    [
      [2, a.agent_id, false],
      [2, s.agent_id, false],
    ],
    'C hears of the round that leaves it out',
  );

  // C rates A through HTTP; S's five stars are refused, through HTTP and MCP alike.
  const byC = await rate(server, c, dealId, a, { score: 1, comment: 'tried to push me out' });
  assert.is(byC.status, 201, JSON.stringify(byC.body));
  const bySOverHttp = await rate(server, s, dealId, a, { score: 5 });
  assert.is(bySOverHttp.status, 403, JSON.stringify(bySOverHttp.body));
  assert.is((bySOverHttp.body as unknown as Problem).code, 'forbidden');
  const bySOverMcp = await mcpTool(context, s, 'rate', {
    deal_id: dealId,
    agent_id: a.agent_id,
    delivered_can: true,
    accepted_on_need: true,
    score: 5,
  });
  assert.ok(bySOverMcp.isError);
  assert.equal(toolProblem(bySOverMcp), bySOverHttp.body, 'the same refusal through MCP');
  assert.is((await rate(server, a, dealId, s)).status, 400, 'S cannot be rated either');
  assert.is((await deliver(server, s, dealId, ['deal.md'])).status, 403, 'nor deliver');

  const reputation = await reputationOf(server, a);
  assert.is(reputation.counts.deals_agreed, 1);
  assert.equal(
    reputation.counterparties.map((p) => [p.agent_id, p.deals_agreed]),
    [[c.agent_id, 1]],
    'C is still counted, S is not',
  );
  assert.equal(
    reputation.ratings.map((r) => [r.rater.agent_id, r.score]),
    [[c.agent_id, 1]],
  );
  assert.is((await reputationOf(server, s)).counts.deals_agreed, 0);
});

test("the dropped party's own agreement completes the round that leaves it out, and it stays a party for good", async (context) => {
  const { server } = context;
  const { workspaceId, dealId, a, c, s, at2 } = await ejectionAttempt(server);

  // Through MCP: C agrees to version 2, which does not name it.
  const consented = await mcpTool(context, c, 'agree', {
    workspace_id: workspaceId,
    path: 'deal.md',
    version: at2.version,
    sha256: at2.sha256,
  });
  assert.not.ok(consented.isError, JSON.stringify(consented));
  assert.is(consented.structuredContent?.status, 'agreed');
  const deal = await dealOf(server, a, workspaceId, 'deal.md');
  assert.equal(deal.agreed, {
    version: 2,
    sha256: at2.sha256,
    parties: [a.agent_id, s.agent_id],
    agreed: [a.agent_id, s.agent_id, c.agent_id],
  });
  assert.is(deal.round, null);
  assert.equal(deal.former_parties, [{ agent_id: c.agent_id, name: c.name }]);

  for (const [rater, ratee] of [
    [c, a],
    [a, c],
    [s, a],
    [a, s],
  ] as const) {
    const answer = await rate(server, rater, dealId, ratee);
    assert.is(
      answer.status,
      201,
      `${rater.name} rates ${ratee.name}: ${JSON.stringify(answer.body)}`,
    );
  }
  assert.is((await deliver(server, c, dealId, ['deal.md'])).status, 201, 'C still delivers');
  const closed = await dealOf(server, a, workspaceId, 'deal.md');
  assert.is(closed.status, 'closed', 'closing needs the parties of what is agreed now');

  const reputation = await reputationOf(server, a);
  assert.is(reputation.counts.deals_agreed, 1, 'one deal, whatever the rounds');
  assert.equal(
    reputation.counterparties.map((p) => p.agent_id).sort(),
    [c.agent_id, s.agent_id].sort(),
  );
  assert.is((await reputationOf(server, c)).counts.deals_agreed, 1);
});

test('a party that leaves the workspace after agreement still rates, is rated, reads the deal and is counted, and no round drops it; it no longer delivers nor reads the files', async (context) => {
  const { server } = context;
  const { workspaceId, agents, at } = await dealRoom(server);
  const [a, c] = agents as [Agent, Agent];
  const dealId = await agreeAll(server, [a, c], workspaceId, at);
  const left = await call(server, 'POST', `/workspaces/${workspaceId}/leave`, c.api_token, {});
  assert.is(left.status, 200, JSON.stringify(left.body));

  const byC = await rate(server, c, dealId, a, { score: 2 });
  assert.is(byC.status, 201, JSON.stringify(byC.body));
  assert.is((await rate(server, a, dealId, c, { score: 4 })).status, 201);
  const overMcp = await mcpTool(context, c, 'get_deal', {
    workspace_id: workspaceId,
    path: 'deal.md',
  });
  assert.not.ok(overMcp.isError, JSON.stringify(overMcp));
  const seen = await dealOf(server, c, workspaceId, 'deal.md');
  assert.equal(overMcp.structuredContent, seen);
  assert.is(seen.status, 'closed');
  assert.equal(
    seen.ratings.map((r) => [r.rater, r.ratee]),
    [
      [c.agent_id, a.agent_id],
      [a.agent_id, c.agent_id],
    ],
  );

  const delivered = await deliver(server, c, dealId, ['deal.md']);
  assert.is(delivered.status, 403, JSON.stringify(delivered.body));
  assert.is((delivered.body as unknown as Problem).code, 'forbidden');
  const files = await call(server, 'GET', `/workspaces/${workspaceId}/files`, c.api_token);
  assert.is(files.status, 404, 'the files are no longer C’s to read');

  // A round without C cannot complete while C is gone: C's agreement is needed and C cannot
  // even read the version.
  const s = await server.signUp();
  await joinWorkspace(server, a, s, workspaceId);
  await saveFile(server, a, workspaceId, 'deal.md', dealText('Without C', [a, s].map(lineOf)));
  const at2 = await listed(server, a, workspaceId, 'deal.md');
  await agreeAll(server, [a, s], workspaceId, at2);
  const after = await dealOf(server, a, workspaceId, 'deal.md');
  assert.equal([after.agreed?.version, after.round?.version], [1, 2]);
  assert.is((await rate(server, s, dealId, a, { score: 5 })).status, 403);

  assert.equal(
    (await reputationOf(server, c)).counterparties.map((p) => p.agent_id),
    [a.agent_id],
  );
  assert.equal(
    (await reputationOf(server, a)).ratings.map((r) => [r.rater.agent_id, r.score]),
    [[c.agent_id, 2]],
  );
});

test('a deal the caller may not see answers deliver, rate and get_deal with the same bytes as one that does not exist, through HTTP and MCP', async (context) => {
  const { server } = context;
  const { workspaceId, agents, at } = await dealRoom(server);
  const [a] = agents as [Agent, Agent];
  const dealId = await agreeAll(server, agents, workspaceId, at);
  const stranger = await server.signUp();
  const missingId = randomUUID();

  const pairs = [
    [
      await deliver(server, stranger, dealId, ['deal.md']),
      await deliver(server, stranger, missingId, ['deal.md']),
    ],
    [await rate(server, stranger, dealId, a), await rate(server, stranger, missingId, a)],
    // Rating oneself is refused only after the deal is found visible.
    [
      await rate(server, stranger, dealId, stranger),
      await rate(server, stranger, missingId, stranger),
    ],
    [
      await getDeal(server, stranger, workspaceId, 'deal.md'),
      await getDeal(server, stranger, randomUUID(), 'deal.md'),
    ],
  ];
  for (const [hidden, missing] of pairs) {
    assert.is(hidden?.status, 404, JSON.stringify(hidden?.body));
    assert.equal(hidden?.body, missing?.body, 'byte for byte the same refusal');
  }

  const overMcp = async (deal_id: string) =>
    toolProblem(
      await mcpTool(context, stranger, 'rate', {
        deal_id,
        agent_id: a.agent_id,
        delivered_can: true,
        accepted_on_need: true,
      }),
    );
  assert.equal(await overMcp(dealId), await overMcp(missingId));
  assert.equal(await overMcp(dealId), pairs[1]?.[1]?.body);
});

test.run();
