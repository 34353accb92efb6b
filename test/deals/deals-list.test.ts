import * as assert from 'uvu/assert';
import {
  agree,
  agreeAll,
  dealRoom,
  dealText,
  lineOf,
  listed,
  type PartyLine,
} from '../helpers/deals.ts';
import { callJson } from '../helpers/http.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import { problemOf, type Agent } from '../helpers/wire-types.ts';
import { saveFile } from '../helpers/workspaces.ts';

/** list_deals (GET /deals/mine): the deals an agent agreed to or is a party of. */
const test = serverSuite('deals: the list of one agent');

interface DealLine {
  deal_id: string;
  workspace_id: string;
  path: string;
  title: string | null;
  status: string;
  agreed_version: number | null;
}

async function myDeals(server: TestServer, agent: Agent, query = '') {
  const answer = await callJson<{ deals: DealLine[]; next_cursor: string | null }>(
    server,
    'GET',
    `/deals/mine${query}`,
    agent.api_token,
  );
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
}

test('an agent lists the deals it agreed to or is a party of, with title, status and agreed version', async ({
  server,
}) => {
  const { workspaceId, agents, at } = await dealRoom(server, 3, 2);
  const [buyer, seller, onlooker] = agents as [Agent, Agent, Agent];
  const first = await agree(server, buyer, workspaceId, 'deal.md', at);
  assert.is(first.status, 200, JSON.stringify(first.body));
  const draft = {
    deal_id: first.body.deal_id,
    workspace_id: workspaceId,
    path: 'deal.md',
    title: 'Logo for the translation bot',
    status: 'draft',
    agreed_version: null,
  };
  assert.equal((await myDeals(server, buyer)).deals, [draft]);
  // Named in the file but not yet agreed: not in the deal yet.
  assert.equal((await myDeals(server, seller)).deals, []);
  await agree(server, seller, workspaceId, 'deal.md', at);
  const agreed = { ...draft, status: 'agreed', agreed_version: at.version };
  assert.equal(await myDeals(server, seller), { deals: [agreed], next_cursor: null });
  assert.equal((await myDeals(server, buyer)).deals, [agreed]);
  assert.equal((await myDeals(server, onlooker)).deals, []);
});

test('deals come newest first, a page at a time, and `status` keeps only that state', async ({
  server,
}) => {
  const { workspaceId, agents, parties } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  const lines: PartyLine[] = parties.map(lineOf);
  const dealIds: string[] = [];
  for (const path of ['a.md', 'b.md', 'c.md']) {
    await saveFile(server, buyer, workspaceId, path, dealText(`Deal ${path}`, lines));
    const at = await listed(server, buyer, workspaceId, path);
    const parties = path === 'c.md' ? [buyer] : [buyer, seller];
    dealIds.push(await agreeAll(server, parties, workspaceId, at, path));
  }
  const first = await myDeals(server, buyer, '?limit=2');
  assert.equal(
    first.deals.map((deal) => deal.path),
    ['c.md', 'b.md'],
  );
  assert.ok(first.next_cursor);
  const second = await myDeals(server, buyer, `?limit=2&cursor=${first.next_cursor}`);
  assert.equal(
    second.deals.map((deal) => deal.path),
    ['a.md'],
  );
  assert.is(second.next_cursor, null);
  const drafts = await myDeals(server, buyer, '?status=draft');
  assert.equal(
    drafts.deals.map((deal) => [deal.deal_id, deal.status]),
    [[dealIds[2], 'draft']],
  );
});

test('a cursor of another list or a state that is not one answers 400, naming the problem', async ({
  server,
}) => {
  const { agents } = await dealRoom(server);
  const [buyer] = agents as [Agent];
  const workspaces = await callJson<{ next_cursor: string | null }>(
    server,
    'GET',
    '/workspaces?limit=1',
    buyer.api_token,
  );
  const foreign = workspaces.body.next_cursor ?? 'not-a-cursor';
  const refused = await callJson(server, 'GET', `/deals/mine?cursor=${foreign}`, buyer.api_token);
  assert.is(refused.status, 400, JSON.stringify(refused.body));
  assert.is(problemOf(refused).code, 'invalid_cursor');
  const badState = await callJson(server, 'GET', '/deals/mine?status=open', buyer.api_token);
  assert.is(badState.status, 400, JSON.stringify(badState.body));
  assert.is(problemOf(badState).code, 'invalid_input');
});

test.run();
