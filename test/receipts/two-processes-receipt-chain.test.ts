import * as assert from 'uvu/assert';
import { dealText, lineOf } from '../helpers/deals.ts';
import { request } from '../helpers/http.ts';
import { allReceipts, chainOrder } from '../helpers/receipt-chain.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';
import { joinWorkspace, newWorkspace, type TestAgent } from '../helpers/workspaces.ts';

/**
 * One workspace's receipt chain written from two servers on one PostgreSQL at once: file saves
 * (workspace commands) and agreements, deliveries and ratings (deal commands) all append to it
 * (actors/receipts/chain.ts), and however they interleave the chain stays one line.
 */
const test = postgresSuite<{ a: TestServer; b: TestServer }>(
  'two servers append to one receipt chain at once',
);

test.before(async (context) => {
  const databaseUrl = await freshDatabaseUrl();
  context.a = await startTestServer({ databaseUrl });
  context.b = await startTestServer({ databaseUrl });
});
test.after(async ({ a, b }) => {
  await a.close();
  await b.close();
});

/** A file saved by `agent` through `server`. */
const save = (server: TestServer, agent: TestAgent, workspaceId: string, path: string) =>
  request(server, 'PUT', `/workspaces/${workspaceId}/files/${path}`, {
    token: agent.api_token,
    text: `${path} by ${agent.agent_id}`,
  });
/** A deal operation (agree, deliver, rate) by `agent` through `server`. */
const post = (server: TestServer, agent: TestAgent, path: string, body: unknown) =>
  request(server, 'POST', path, { token: agent.api_token, body });

test('saves, agreements, deliveries and ratings sent through both servers at once form one chain', async ({
  a,
  b,
}) => {
  const buyer = await a.signUp();
  const seller = await b.signUp();
  const workspaceId = await newWorkspace(a, buyer);
  await joinWorkspace(b, buyer, seller, workspaceId);
  const saved = await request(a, 'PUT', `/workspaces/${workspaceId}/files/deal.md`, {
    token: buyer.api_token,
    text: dealText('Chained work', [lineOf(buyer, 0), lineOf(seller, 1)]),
  });
  assert.is(saved.status, 201, JSON.stringify(saved.body));
  const { version, sha256 } = saved.body.receipt as { version: number; sha256: string };
  const terms = { workspace_id: workspaceId, path: 'deal.md', version, sha256 };
  const agreed = await Promise.all([
    post(a, buyer, '/deals/agree', terms),
    post(b, seller, '/deals/agree', terms),
  ]);
  assert.equal(
    agreed.map((answer) => answer.status),
    [200, 200],
    JSON.stringify(agreed.map((answer) => answer.body)),
  );
  const dealId = agreed[0]?.body.deal_id as string;

  // Every kind of receipt, from both servers, all sent at once.
  const rounds = 8;
  const rating = (ratee: TestAgent, round: number) => ({
    deal_id: dealId,
    agent_id: ratee.agent_id,
    delivered_can: true,
    accepted_on_need: true,
    score: 1 + (round % 5),
  });
  const sent: ReturnType<typeof post>[] = [];
  for (let round = 0; round < rounds; round++) {
    const [one, other] = round % 2 ? [a, b] : [b, a];
    sent.push(
      save(one, buyer, workspaceId, `buyer/${round}.txt`),
      save(other, seller, workspaceId, `seller/${round}.txt`),
      post(one, seller, '/deals/deliver', { deal_id: dealId, files: ['deal.md'] }),
      post(other, buyer, '/deals/rate', rating(seller, round)),
      post(one, seller, '/deals/rate', rating(buyer, round)),
    );
  }
  const answers = await Promise.all(sent);
  assert.equal(
    answers.map((answer) => answer.status),
    Array.from({ length: rounds }, () => [201, 201, 201, 201, 201]).flat(),
    JSON.stringify(answers.filter((answer) => answer.status >= 300).map((answer) => answer.body)),
  );

  const receipts = await allReceipts(b, buyer, workspaceId, ['deal.md']);
  assert.is(receipts.length, 1 + 2 + rounds * 5, 'every receipt is listed');
  chainOrder(receipts);
});

test.run();
