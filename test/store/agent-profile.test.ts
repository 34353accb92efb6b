import * as assert from 'uvu/assert';
import { callTool, toolProblem } from '../helpers/clients.ts';
import { agreeAll, dealRoom, rate, reputationOf } from '../helpers/deals.ts';
import { callJson as call } from '../helpers/http.ts';
import { mcpClient } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import { postListing, repairIn, storeJson, storeSuite, type Listing } from '../helpers/store.ts';
import { problemOf, type Agent } from '../helpers/wire-types.ts';

/**
 * The public agent profile (GET /agents/<agent_id>, get_agent_profile): name, since, the
 * agent's listings as the store shows them, and its reputation in brief, checked against the
 * full reputation record, at the HTTP and MCP doors. An empty profile and the bound on its
 * listings, through the direct door: agent-profile-rules.test.ts.
 */
const test = storeSuite('the public agent profile');

interface Profile {
  agent_id: string;
  name: string;
  since: string;
  listings: Listing[];
  listings_truncated: boolean;
  reputation: {
    counts: Record<string, number>;
    average_score: number | null;
    scored_ratings: number;
    url: string;
  };
  presence: { online: boolean | null; last_seen_at: string | null; note: string | null };
  responsiveness: Record<string, number | null>;
}

const profileOf = (server: TestServer, agentId: string, token: string | null = null) =>
  call<Profile>(server, 'GET', `/agents/${agentId}`, token);

test('the profile shows name, since, listings as the store does, and the mean score of the standing scored ratings, as the record has them', async (context) => {
  const { server } = context;
  const { workspaceId, agents, at } = await dealRoom(server, 4, 4);
  const [seller, b, c, d] = agents as [Agent, Agent, Agent, Agent];
  const dealId = await agreeAll(server, [seller, b, c, d], workspaceId, at);
  // b's 4 is corrected to 2 (the 4 stays on record, superseded); c gives 5; d gives no score.
  for (const [rater, extra] of [
    [b, { score: 4 }],
    [b, { score: 2 }],
    [c, { score: 5 }],
    [d, {}],
  ] as const) {
    const rated = await rate(server, rater, dealId, seller, extra);
    assert.is(rated.status, 201, JSON.stringify(rated.body));
  }
  const posted = await postListing(server, seller, repairIn('Berlin'));
  assert.is(posted.status, 201, JSON.stringify(posted.body));

  const record = await reputationOf(server, seller);
  const scores = record.ratings.flatMap((r) => (r.score === null ? [] : [r.score]));
  assert.equal(scores.sort(), [2, 5], 'the record holds the standing scores');

  const anonymous = await profileOf(server, seller.agent_id);
  assert.is(anonymous.status, 200, JSON.stringify(anonymous.body));
  const store = await storeJson(server, '?limit=500');
  assert.equal(anonymous.body, {
    agent_id: seller.agent_id,
    name: record.name,
    since: record.since,
    listings: store.body.listings.filter((l) => l.listing_id === posted.body.listing_id),
    listings_truncated: false,
    reputation: {
      counts: record.counts,
      average_score: 3.5,
      scored_ratings: 2,
      url: `${server.baseUrl}/agents/${seller.agent_id}/reputation`,
    },
    // The author of the listing, as the listing shows it: its presence and responsiveness.
    presence: store.body.listings[0]?.author.presence,
    responsiveness: store.body.listings[0]?.author.responsiveness,
  });
  assert.is(anonymous.body.presence.online, true, 'the seller posted a moment ago');
  assert.is(anonymous.body.reputation.counts.deals_agreed, 1);
  assert.not.ok('contact' in (anonymous.body.listings[0]?.agent_written ?? {}));

  const signedIn = await profileOf(server, seller.agent_id, b.api_token);
  assert.is(signedIn.body.listings[0]?.agent_written.contact, 'bikes@example.org');

  const client = await mcpClient(context, b.api_token);
  const overMcp = await callTool(client, 'get_agent_profile', { agent_id: seller.agent_id });
  assert.not.ok(overMcp.isError, JSON.stringify(overMcp));
  assert.equal(overMcp.structuredContent, signedIn.body);
});

test('an agent that is not signed up answers the 404 get_reputation answers; an id that is no uuid, 400', async (context) => {
  const { server } = context;
  const nobody = '00000000-0000-4000-8000-000000000000';
  const missing = await profileOf(server, nobody);
  assert.is(missing.status, 404, JSON.stringify(missing.body));
  assert.is(problemOf(missing).code, 'not_found');
  const reputation = await call(server, 'GET', `/agents/${nobody}/reputation`, null);
  assert.equal(missing.body, reputation.body);
  const malformed = await profileOf(server, 'someone');
  assert.is(malformed.status, 400, JSON.stringify(malformed.body));
  assert.is(problemOf(malformed).code, 'invalid_input');

  const agent = await server.signUp();
  const client = await mcpClient(context, agent.api_token);
  const overMcp = await callTool(client, 'get_agent_profile', { agent_id: nobody });
  assert.ok(overMcp.isError);
  assert.is(toolProblem(overMcp).code, 'not_found');
});

test.run();
