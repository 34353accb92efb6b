import * as assert from 'uvu/assert';
import { heard } from '../helpers/changes.ts';
import { agreeAll, dealOf, dealText, lineOf, rate, reputationOf } from '../helpers/deals.ts';
import { callJson as call } from '../helpers/http.ts';
import { allReceipts, chainOrder } from '../helpers/receipt-chain.ts';
import { twoServerSuite, type TwoServers } from '../helpers/two-servers.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { joinWorkspace, newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * Two servers on one PostgreSQL carry one deal: every party agreeing at once, half through each
 * server, makes it agreed exactly once; ratings and file saves racing on the two servers all
 * land, chained one after another in the workspace without a fork.
 */
const test = twoServerSuite('two servers carry one deal at once');

/**
 * `size` agents signed up on alternate servers in a private workspace, a deal file naming them
 * all saved, and its version and sha256 as list_files shows them.
 */
async function dealRoom({ a, b }: TwoServers, size: number) {
  const agents: Agent[] = [];
  for (let i = 0; i < size; i++) agents.push(await (i % 2 ? b : a).signUp());
  const [owner] = agents as [Agent];
  const workspaceId = await newWorkspace(a, owner);
  for (const [i, guest] of agents.slice(1).entries()) {
    await joinWorkspace(i % 2 ? a : b, owner, guest, workspaceId);
  }
  await saveFile(a, owner, workspaceId, 'deal.md', dealText('Shared work', agents.map(lineOf)));
  const files = await call<{ files: { path: string; version: number; sha256: string }[] }>(
    b,
    'GET',
    `/workspaces/${workspaceId}/files`,
    owner.api_token,
  );
  const file = files.body.files.find((f) => f.path === 'deal.md');
  assert.ok(file);
  for (const agent of agents) await heard(a, agent, 'none');
  // Both servers hold the workspace before the race.
  await call(a, 'GET', `/workspaces/${workspaceId}`, owner.api_token);
  await call(b, 'GET', `/workspaces/${workspaceId}`, owner.api_token);
  return { agents, workspaceId, at: { version: file.version, sha256: file.sha256 } };
}

test('all parties agreeing at once, half through each server, make the deal agreed exactly once', async (servers) => {
  const { a, b } = servers;
  // Several deals, each raced once: one race alone might not overlap at all.
  for (let round = 0; round < 5; round++) {
    const { agents, workspaceId, at } = await dealRoom(servers, 4);
    const answers = await Promise.all(
      agents.map((agent, i) =>
        call<{ deal_id: string; status: string }>(
          i % 2 ? b : a,
          'POST',
          '/deals/agree',
          agent.api_token,
          {
            workspace_id: workspaceId,
            path: 'deal.md',
            ...at,
          },
        ),
      ),
    );
    assert.equal(
      answers.map((answer) => answer.status),
      [200, 200, 200, 200],
      JSON.stringify(answers.map((answer) => answer.body)),
    );
    assert.is(new Set(answers.map((answer) => answer.body.deal_id)).size, 1, 'one deal');
    assert.is(
      answers.filter((answer) => answer.body.status === 'agreed').length,
      1,
      'exactly one agreement answers agreed',
    );
    for (const [i, agent] of agents.entries()) {
      const agreed = await heard(i % 2 ? a : b, agent, 'deal.agreed');
      assert.is(agreed.length, 4, `${agent.name} hears every agreement`);
      assert.is(
        agreed.filter((change) => change.data.agreed === true).length,
        1,
        `${agent.name} hears the deal agreed once`,
      );
    }
    for (const server of [a, b]) {
      const deal = await dealOf(server, agents[0] as Agent, workspaceId, 'deal.md');
      assert.is(deal.status, 'agreed');
      assert.equal([...(deal.agreed?.agreed ?? [])].sort(), agents.map((x) => x.agent_id).sort());
      assert.is(deal.agreements.length, 4);
    }
    chainOrder(await allReceipts(b, agents[1] as Agent, workspaceId, ['deal.md']));
  }
});

test('a rating and a file save on the two servers at once both land, and the receipt chain has no fork', async (servers) => {
  const { a, b } = servers;
  const { agents, workspaceId, at } = await dealRoom(servers, 2);
  const [buyer, seller] = agents as [Agent, Agent];
  for (const [agent, server] of [
    [buyer, a],
    [seller, b],
  ] as const) {
    const agreed = await call(server, 'POST', '/deals/agree', agent.api_token, {
      workspace_id: workspaceId,
      path: 'deal.md',
      ...at,
    });
    assert.is(agreed.status, 200, JSON.stringify(agreed.body));
  }
  const { deal_id: dealId } = await dealOf(a, buyer, workspaceId, 'deal.md');
  // Both servers hold the deal before the race.
  await dealOf(b, seller, workspaceId, 'deal.md');

  const rounds = 10;
  for (let round = 0; round < rounds; round++) {
    const [rateOn, saveOn] = round % 2 ? [a, b] : [b, a];
    const [rated] = await Promise.all([
      call<{ rating_id: string }>(rateOn, 'POST', '/deals/rate', buyer.api_token, {
        deal_id: dealId,
        agent_id: seller.agent_id,
        delivered_can: true,
        accepted_on_need: true,
        score: 1 + (round % 5),
      }),
      saveFile(saveOn, seller, workspaceId, `notes/${round}.txt`, `note ${round}`),
    ]);
    assert.is(rated.status, 201, JSON.stringify(rated.body));
  }

  for (const server of [a, b]) {
    const deal = await dealOf(server, buyer, workspaceId, 'deal.md');
    assert.is(deal.ratings.length, rounds, 'every rating is on record');
    assert.is(
      deal.ratings.filter((rating) => rating.superseded_by === null).length,
      1,
      'one standing rating: each corrected the one before',
    );
  }
  const files = await call<{ files: unknown[] }>(
    b,
    'GET',
    `/workspaces/${workspaceId}/files?prefix=notes/`,
    seller.api_token,
  );
  assert.is(files.body.files.length, rounds, 'every save landed');
  // The deal file, two agreements, the ratings and the saves: one chain.
  assert.is(
    chainOrder(await allReceipts(a, buyer, workspaceId, ['deal.md'])).length,
    1 + 2 + rounds * 2,
  );
});

test('a record one server keeps shows at once a rating made through the other', async (servers) => {
  const { a, b } = servers;
  const { agents, workspaceId, at } = await dealRoom(servers, 2);
  const [maker, rater] = agents as [Agent, Agent];
  const dealId = await agreeAll(a, [maker, rater], workspaceId, at);
  assert.equal((await reputationOf(a, maker)).ratings, []);
  assert.equal((await reputationOf(a, maker)).ratings, [], 'kept by a');
  const rated = await rate(b, rater, dealId, maker, { score: 3, comment: 'through b' });
  assert.is(rated.status, 201, JSON.stringify(rated.body));
  assert.equal(
    (await reputationOf(a, maker)).ratings.map((r) => [r.score, r.comment]),
    [[3, 'through b']],
  );
});

test.run();
