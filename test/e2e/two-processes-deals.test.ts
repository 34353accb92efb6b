import { createHash } from 'node:crypto';
import * as assert from 'uvu/assert';
import { canonicalJson } from '../../protocol/jcs.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';
import { newWorkspace, joinWorkspace } from '../helpers/workspaces.ts';
import { callJson as call } from '../helpers/http.ts';

/**
 * Two servers on one PostgreSQL carry one deal: every party agreeing at once, half through each
 * server, makes it agreed exactly once; ratings and file saves racing on the two servers all
 * land, chained one after another in the workspace without a fork.
 */
const test = postgresSuite<{ a: TestServer; b: TestServer }>('two servers carry one deal at once');

test.before(async (context) => {
  const databaseUrl = await freshDatabaseUrl();
  context.a = await startTestServer({ databaseUrl });
  context.b = await startTestServer({ databaseUrl });
});
test.after(async ({ a, b }) => {
  await a.close();
  await b.close();
});

type Agent = { agent_id: string; name: string; api_token: string };
type Json = Record<string, unknown>;
type Receipt = Json & { prev_hash: string | null; signature: string };

async function save(
  server: TestServer,
  agent: Agent,
  workspaceId: string,
  path: string,
  body: string,
) {
  const response = await fetch(server.url(`/workspaces/${workspaceId}/files/${path}`), {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.api_token}` },
    body,
  });
  return { status: response.status, body: (await response.json()) as { receipt: Receipt } };
}

interface Change {
  type: string;
  data: Json;
}

/** The agent's unread changes of `type`, read on `server` (reading moves its place). */
async function heard(server: TestServer, agent: Agent, type: string): Promise<Change[]> {
  const page = await call<{ changes: Change[] }>(
    server,
    'GET',
    '/changes?limit=500',
    agent.api_token,
  );
  assert.is(page.status, 200);
  return page.body.changes.filter((change) => change.type === type);
}

/** A deal file naming every one of `parties`. */
function dealText(parties: Agent[]): string {
  const lines = ['---', 'deal: "Shared work"', 'parties:'];
  for (const [i, party] of parties.entries()) {
    lines.push(`  - agent_id: "${party.agent_id}"`, `    need: "need ${i}"`, `    can: "can ${i}"`);
  }
  return [...lines, '---', 'Terms.'].join('\n');
}

interface Deal {
  deal_id: string | null;
  status: string;
  agreed: { version: number; agreed: string[] } | null;
  agreements: { receipt: Receipt }[];
  deliveries: { receipt: Receipt }[];
  ratings: { rating_id: string; superseded_by: string | null; receipt: Receipt }[];
}

async function dealOn(server: TestServer, agent: Agent, workspaceId: string) {
  const shown = await call<Deal>(
    server,
    'GET',
    `/deals?workspace_id=${workspaceId}&path=deal.md`,
    agent.api_token,
  );
  assert.is(shown.status, 200, JSON.stringify(shown.body));
  return shown.body;
}

/**
 * `size` agents signed up on alternate servers in a private workspace, a deal file naming them
 * all saved, and its version and sha256 as list_files shows them.
 */
async function dealRoom({ a, b }: { a: TestServer; b: TestServer }, size: number) {
  const agents: Agent[] = [];
  for (let i = 0; i < size; i++) agents.push(await (i % 2 ? b : a).signUp());
  const [owner] = agents as [Agent];
  const workspaceId = await newWorkspace(a, owner);
  for (const [i, guest] of agents.slice(1).entries()) {
    await joinWorkspace(i % 2 ? a : b, owner, guest, workspaceId);
  }
  const saved = await save(a, owner, workspaceId, 'deal.md', dealText(agents));
  assert.is(saved.status, 201);
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

const hashOf = (receipt: Receipt) =>
  createHash('sha256').update(canonicalJson(receipt)).digest('hex');

/**
 * Walks prev_hash over every receipt of the workspace (list_receipts: files and deals) from the
 * first: fails on a fork (two receipts naming one predecessor) or a receipt left off the chain.
 */
async function assertOneChain(server: TestServer, agent: Agent, workspaceId: string) {
  const files = await call<{ receipts: Receipt[]; next_cursor: string | null }>(
    server,
    'GET',
    `/workspaces/${workspaceId}/receipts?limit=100`,
    agent.api_token,
  );
  assert.is(files.status, 200);
  assert.is(files.body.next_cursor, null, 'the whole chain on one page');
  const receipts = files.body.receipts;
  const listed = new Set(receipts.map((r) => JSON.stringify(r)));
  const deal = await dealOn(server, agent, workspaceId);
  for (const receipt of [
    ...deal.agreements.map((x) => x.receipt),
    ...deal.deliveries.map((x) => x.receipt),
    ...deal.ratings.map((x) => x.receipt),
  ]) {
    assert.ok(listed.has(JSON.stringify(receipt)), 'list_receipts holds every deal receipt');
  }
  const byPrev = new Map<string | null, Receipt>();
  for (const receipt of receipts) {
    assert.not.ok(
      byPrev.has(receipt.prev_hash),
      `two receipts follow ${receipt.prev_hash}: a fork`,
    );
    byPrev.set(receipt.prev_hash, receipt);
  }
  let walked = 0;
  for (let next = byPrev.get(null); next; next = byPrev.get(hashOf(next))) walked++;
  assert.is(walked, receipts.length, 'one unbroken chain holds every receipt');
  return receipts.length;
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
      const deal = await dealOn(server, agents[0] as Agent, workspaceId);
      assert.is(deal.status, 'agreed');
      assert.equal([...(deal.agreed?.agreed ?? [])].sort(), agents.map((x) => x.agent_id).sort());
      assert.is(deal.agreements.length, 4);
    }
    await assertOneChain(b, agents[1] as Agent, workspaceId);
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
  const { deal_id: dealId } = await dealOn(a, buyer, workspaceId);
  // Both servers hold the deal before the race.
  await dealOn(b, seller, workspaceId);

  const rounds = 10;
  for (let round = 0; round < rounds; round++) {
    const [rateOn, saveOn] = round % 2 ? [a, b] : [b, a];
    const [rated, saved] = await Promise.all([
      call<{ rating_id: string }>(rateOn, 'POST', '/deals/rate', buyer.api_token, {
        deal_id: dealId,
        agent_id: seller.agent_id,
        delivered_can: true,
        accepted_on_need: true,
        score: 1 + (round % 5),
      }),
      save(saveOn, seller, workspaceId, `notes/${round}.txt`, `note ${round}`),
    ]);
    assert.is(rated.status, 201, JSON.stringify(rated.body));
    assert.is(saved.status, 201, JSON.stringify(saved.body));
  }

  for (const server of [a, b]) {
    const deal = await dealOn(server, buyer, workspaceId);
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
  assert.is(await assertOneChain(a, buyer, workspaceId), 1 + 2 + rounds * 2);
});

test.run();
