import { createPublicKey, randomUUID, verify } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { canonicalJson } from '../../protocol/jcs.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { callJson as call } from '../helpers/http.ts';
import { connectMcp } from '../helpers/clients.ts';
import { joinWorkspace, newWorkspace } from '../helpers/workspaces.ts';
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
  newChanges,
  ofType,
  problemOf,
  rate,
  reputationOf,
  room,
  save,
  sha256Hex,
  type Agent,
  type Agreed,
  type Delivered,
  type Json,
  type Problem,
  type Receipt,
} from '../helpers/deals.ts';

/**
 * Deals end to end, held to protocol/documents/deals-protocol.md: agreeing to an exact version
 * of a deal file, delivering, rating, the receipts anyone can verify with the published keys,
 * the changes every party hears, reputation, the refusals, racing agreements, and MCP.
 */

type Context = { server: TestServer; clients: Client[] };
const test = suite<Context>('deals through HTTP and MCP');

test.before(async (context) => {
  context.server = await startTestServer();
  context.clients = [];
});
test.after.each(async ({ clients }) => {
  for (const client of clients.splice(0)) await client.close();
});
test.after(async ({ server }) => {
  await server.close();
});

/** What a receipt following `receipt` names as its `prev_hash` (deals-protocol.md). */
const hashOf = (receipt: Json) => sha256Hex(canonicalJson(receipt));

interface Jwks {
  keys: { kid: string; kty: string; crv: string; x: string }[];
}

const jwksOf = async (server: TestServer) =>
  (await (await fetch(server.url('/.well-known/service-keys.json'))).json()) as Jwks;

/** Whether `receipt` verifies with the published keys alone, with plain node:crypto. */
function verifies(receipt: Receipt, jwks: Jwks): boolean {
  const jwk = jwks.keys.find((key) => key.kid === receipt.kid);
  if (!jwk || jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519') return false;
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
  const { signature, ...unsigned } = receipt;
  return verify(
    null,
    Buffer.from(canonicalJson(unsigned)),
    key,
    Buffer.from(signature, 'base64url'),
  );
}

/**
 * Every receipt of a workspace, as list_receipts answers it (the whole chain: files and deals);
 * each receipt get_deal shows for `dealPaths` is among them, the same bytes.
 */
async function allReceipts(
  server: TestServer,
  agent: Agent,
  workspaceId: string,
  dealPaths: string[],
): Promise<Receipt[]> {
  const listed = await call<{ receipts: Receipt[]; next_cursor: string | null }>(
    server,
    'GET',
    `/workspaces/${workspaceId}/receipts?limit=100`,
    agent.api_token,
  );
  assert.is(listed.status, 200);
  assert.is(listed.body.next_cursor, null, 'the whole chain on one page');
  const receipts = listed.body.receipts;
  const byId = new Map(receipts.map((r) => [r.receipt_id, r]));
  for (const path of dealPaths) {
    const deal = await dealOf(server, agent, workspaceId, path);
    for (const receipt of [
      ...deal.agreements.map((a) => a.receipt),
      ...deal.deliveries.map((d) => d.receipt),
      ...deal.ratings.map((r) => r.receipt),
    ]) {
      assert.equal(byId.get(receipt.receipt_id), receipt, 'list_receipts holds the deal receipt');
    }
  }
  return receipts;
}

/**
 * The receipts in chain order, from the workspace's first (prev_hash null): fails the test if
 * two name the same predecessor (a fork) or one is not reached by the walk.
 */
function chainOrder(receipts: Receipt[]): Receipt[] {
  const byPrev = new Map<string | null, Receipt>();
  for (const receipt of receipts) {
    assert.not.ok(
      byPrev.has(receipt.prev_hash),
      `two receipts follow ${receipt.prev_hash}: the chain forks`,
    );
    byPrev.set(receipt.prev_hash, receipt);
  }
  const order: Receipt[] = [];
  let next = byPrev.get(null);
  while (next) {
    order.push(next);
    next = byPrev.get(hashOf(next));
  }
  assert.is(order.length, receipts.length, 'one unbroken chain holds every receipt');
  return order;
}

async function mcpClient(context: Context, token: string): Promise<Client> {
  const client = await connectMcp(context.server, token, 'deals-test-agent');
  context.clients.push(client);
  return client;
}

type ToolResult = {
  isError?: boolean;
  content: { type: string; text: string }[];
  structuredContent?: Json;
};
const tool = async (client: Client, name: string, args: Json) =>
  (await client.callTool({ name, arguments: args })) as ToolResult;

const toolProblem = (result: ToolResult) => JSON.parse(result.content[0]?.text ?? '{}') as Problem;

// ---------------------------------------------------------------------------------------------
// The flow

test('two parties agree to the saved deal file, one delivers, both rate: draft, agreed, delivered, closed', async ({
  server,
}) => {
  const { workspaceId, agents, text, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  assert.equal(at, { version: 1, sha256: sha256Hex(text), size: Buffer.byteLength(text) });

  const draft = await dealOf(server, seller, workspaceId, 'deal.md');
  assert.equal(
    { ...draft, parties: draft.parties.map((p) => p.agent_id) },
    {
      deal_id: null,
      workspace_id: workspaceId,
      path: 'deal.md',
      title: 'Logo for the translation bot',
      status: 'draft',
      parties: [buyer.agent_id, seller.agent_id],
      former_parties: [],
      agreed: null,
      round: null,
      agreements: [],
      deliveries: [],
      ratings: [],
      payments: [],
    },
    'a file never agreed to is a draft without a deal id',
  );

  const first = await agree(server, buyer, workspaceId, 'deal.md', at);
  assert.is(first.status, 200, JSON.stringify(first.body));
  assert.is(first.body.status, 'draft', 'one of two parties agreed');
  const dealId = first.body.deal_id;
  const second = await agree(server, seller, workspaceId, 'deal.md', at);
  assert.is(second.status, 200, JSON.stringify(second.body));
  assert.equal([second.body.deal_id, second.body.status], [dealId, 'agreed']);

  await save(server, seller, workspaceId, 'out/logo.svg', '<svg/>');
  await save(server, seller, workspaceId, 'out/logo.png', 'PNG bytes');
  const svg = await listed(server, seller, workspaceId, 'out/logo.svg');
  const png = await listed(server, seller, workspaceId, 'out/logo.png');
  const delivered = await deliver(
    server,
    seller,
    dealId,
    ['out/logo.svg', 'out/logo.png'],
    'both formats',
  );
  assert.is(delivered.status, 201, JSON.stringify(delivered.body));
  const pinned = [
    { path: 'out/logo.svg', ...svg },
    { path: 'out/logo.png', ...png },
  ];
  assert.equal(delivered.body.files, pinned, 'each file pinned to its version, size and sha256');
  assert.is((await dealOf(server, buyer, workspaceId, 'deal.md')).status, 'delivered');
  // A later save does not move what was delivered.
  await save(server, seller, workspaceId, 'out/logo.svg', '<svg version="2"/>');

  const byBuyer = await rate(server, buyer, dealId, seller, { score: 5, comment: 'crisp' });
  assert.is(byBuyer.status, 201, JSON.stringify(byBuyer.body));
  assert.equal([byBuyer.body.payment_backed, byBuyer.body.supersedes], [false, null]);
  assert.is((await dealOf(server, buyer, workspaceId, 'deal.md')).status, 'delivered');
  const bySeller = await rate(server, seller, dealId, buyer, { accepted_on_need: false });
  assert.is(bySeller.status, 201, JSON.stringify(bySeller.body));

  const deal = await dealOf(server, buyer, workspaceId, 'deal.md');
  assert.is(deal.deal_id, dealId);
  assert.is(deal.status, 'closed');
  assert.equal(deal.parties, [
    { agent_id: buyer.agent_id, name: buyer.name, need: 'need of party 0', can: 'can of party 0' },
    {
      agent_id: seller.agent_id,
      name: seller.name,
      need: 'need of party 1',
      can: 'can of party 1',
    },
  ]);
  assert.equal(deal.agreed, {
    version: 1,
    sha256: at.sha256,
    parties: [buyer.agent_id, seller.agent_id],
    agreed: [buyer.agent_id, seller.agent_id],
  });
  assert.is(deal.round, null);
  assert.equal(
    deal.agreements.map((a) => [a.agent_id, a.version, a.sha256, a.receipt]),
    [
      [buyer.agent_id, 1, at.sha256, first.body.agreement],
      [seller.agent_id, 1, at.sha256, second.body.agreement],
    ],
  );
  assert.equal(
    deal.deliveries.map((d) => [d.delivery_id, d.agent_id, d.note, d.files, d.receipt]),
    [[delivered.body.delivery_id, seller.agent_id, 'both formats', pinned, delivered.body.receipt]],
  );
  assert.equal(
    deal.ratings.map((r) => [
      r.rating_id,
      r.rater,
      r.ratee,
      r.delivered_can,
      r.accepted_on_need,
      r.score,
      r.comment,
      r.payment_backed,
      r.superseded_by,
      r.receipt,
    ]),
    [
      [
        byBuyer.body.rating_id,
        buyer.agent_id,
        seller.agent_id,
        true,
        true,
        5,
        'crisp',
        false,
        null,
        byBuyer.body.receipt,
      ],
      [
        bySeller.body.rating_id,
        seller.agent_id,
        buyer.agent_id,
        true,
        false,
        null,
        null,
        false,
        null,
        bySeller.body.receipt,
      ],
    ],
  );
  assert.equal(deal.payments, []);
  const now = server.services.clock.now();
  for (const when of [...deal.agreements, ...deal.deliveries, ...deal.ratings].map((x) => x.at)) {
    assert.ok(Math.abs(Date.parse(when) - now) < 60_000, `${when} is the time it happened`);
  }
});

test('every agreement, delivery and rating receipt verifies with plain node:crypto and chains after the receipt before it, whatever that one recorded', async ({
  server,
}) => {
  const { workspaceId, agents, at, saved } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  const jwks = await jwksOf(server);
  const steps: { receipt: Receipt; action: string }[] = [{ receipt: saved, action: 'save' }];

  const first = await agree(server, buyer, workspaceId, 'deal.md', at);
  steps.push({ receipt: first.body.agreement, action: 'agree' });
  const second = await agree(server, seller, workspaceId, 'deal.md', at);
  steps.push({ receipt: second.body.agreement, action: 'agree' });
  const dealId = first.body.deal_id;
  steps.push({
    receipt: await save(server, seller, workspaceId, 'work.txt', 'the work'),
    action: 'save',
  });
  const delivered = await deliver(server, seller, dealId, ['work.txt']);
  steps.push({ receipt: delivered.body.receipt, action: 'deliver' });
  const rated = await rate(server, buyer, dealId, seller, { score: 4 });
  steps.push({ receipt: rated.body.receipt, action: 'rate' });
  steps.push({
    receipt: await save(server, buyer, workspaceId, 'notes.txt', 'thanks'),
    action: 'save',
  });
  const back = await rate(server, seller, dealId, buyer);
  steps.push({ receipt: back.body.receipt, action: 'rate' });

  for (const [i, { receipt, action }] of steps.entries()) {
    assert.is(receipt.action, action, `receipt ${i} records a ${action}`);
    assert.ok(verifies(receipt, jwks), `receipt ${i} (${action}) verifies with the published key`);
    const previous = steps[i - 1]?.receipt;
    assert.is(
      receipt.prev_hash,
      previous ? hashOf(previous) : null,
      `receipt ${i} (${action}) chains after receipt ${i - 1}`,
    );
  }

  const agreement = first.body.agreement;
  assert.equal(
    [
      agreement.deal_id,
      agreement.path,
      agreement.version,
      agreement.sha256,
      agreement.parties,
      agreement.agent_id,
    ],
    [dealId, 'deal.md', at.version, at.sha256, [buyer.agent_id, seller.agent_id], buyer.agent_id],
  );
  assert.type(agreement.at, 'string');
  const work = await listed(server, seller, workspaceId, 'work.txt');
  assert.equal(delivered.body.receipt.files, [{ path: 'work.txt', ...work }]);
  assert.equal(
    [rated.body.receipt.rater, rated.body.receipt.ratee, rated.body.receipt.score],
    [buyer.agent_id, seller.agent_id, 4],
  );

  // A receipt altered by one byte no longer verifies.
  assert.not.ok(verifies({ ...agreement, version: at.version + 1 }, jwks));

  // list_receipts holds the one chain, files and deals, get_deal's receipts among them.
  const whole = await allReceipts(server, buyer, workspaceId, ['deal.md']);
  const order = chainOrder(whole);
  assert.equal(
    order.map((r) => r.signature),
    steps.map((s) => s.receipt.signature),
  );
  // Two at a time, the pages walk the same receipts once each, newest first.
  const paged: Receipt[] = [];
  let cursor: string | null = null;
  do {
    const page: { status: number; body: { receipts: Receipt[]; next_cursor: string | null } } =
      await call(
        server,
        'GET',
        `/workspaces/${workspaceId}/receipts?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        buyer.api_token,
      );
    assert.is(page.status, 200);
    paged.push(...page.body.receipts);
    cursor = page.body.next_cursor;
  } while (cursor);
  assert.equal(
    paged.map((r) => r.signature),
    whole.map((r) => r.signature),
  );
});

test('a save after agreement leaves `agreed` alone; agreeing to the new version opens a round that becomes what was agreed when both agree, the old agreements still listed', async ({
  server,
}) => {
  const { workspaceId, agents, parties, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  const dealId = await agreeAll(server, parties, workspaceId, at);
  const rated = await rate(server, buyer, dealId, seller);
  assert.is(rated.status, 201);

  const newer = dealText('Logo, in SVG only', parties.map(lineOf), 'Changed terms.');
  await save(server, seller, workspaceId, 'deal.md', newer);
  const at2 = await listed(server, seller, workspaceId, 'deal.md');
  assert.equal([at2.version, at2.sha256], [2, sha256Hex(newer)]);
  const saved = await dealOf(server, buyer, workspaceId, 'deal.md');
  assert.is(saved.status, 'agreed');
  assert.equal([saved.agreed?.version, saved.agreed?.sha256], [1, at.sha256]);
  assert.is(saved.round, null, 'a save alone opens no round');
  assert.is(saved.title, 'Logo for the translation bot', 'the header shown is what was agreed');

  const opened = await agree(server, seller, workspaceId, 'deal.md', at2);
  assert.is(opened.status, 200, JSON.stringify(opened.body));
  assert.is(opened.body.status, 'agreed', 'still agreed: to version 1');
  const open = await dealOf(server, buyer, workspaceId, 'deal.md');
  assert.equal([open.agreed?.version, open.agreed?.sha256], [1, at.sha256]);
  assert.equal(open.round, {
    version: 2,
    sha256: at2.sha256,
    parties: [buyer.agent_id, seller.agent_id],
    agreed: [seller.agent_id],
  });
  // What was agreed still governs: delivering and rating under version 1 go on.
  assert.is((await deliver(server, seller, dealId, ['deal.md'])).status, 201);

  const closing = await agree(server, buyer, workspaceId, 'deal.md', at2);
  assert.is(closing.status, 200, JSON.stringify(closing.body));
  assert.equal([closing.body.deal_id, closing.body.status], [dealId, 'agreed']);
  const deal = await dealOf(server, buyer, workspaceId, 'deal.md');
  assert.equal(deal.agreed, {
    version: 2,
    sha256: at2.sha256,
    parties: [buyer.agent_id, seller.agent_id],
    agreed: [seller.agent_id, buyer.agent_id],
  });
  assert.is(deal.round, null);
  assert.is(deal.title, 'Logo, in SVG only');
  assert.equal(
    deal.agreements.map((a) => [a.agent_id, a.version, a.sha256]),
    [
      [buyer.agent_id, 1, at.sha256],
      [seller.agent_id, 1, at.sha256],
      [seller.agent_id, 2, at2.sha256],
      [buyer.agent_id, 2, at2.sha256],
    ],
    'the old agreements stay on record',
  );
  assert.is(deal.ratings.length, 1, 'the rating given under version 1 stays on record');
});

test('a party that agreed to a version earlier counts toward it, even after agreements to another version came between', async ({
  server,
}) => {
  // deals-protocol.md: "The deal is `agreed` once every party named in that version has agreed
  // to it." Both parties here agree to version 1, with an agreement to version 2 in between.
  const { workspaceId, agents, parties, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  await save(
    server,
    seller,
    workspaceId,
    'deal.md',
    dealText('Counter-offer', parties.map(lineOf)),
  );
  const at2 = await listed(server, seller, workspaceId, 'deal.md');
  assert.is((await agree(server, buyer, workspaceId, 'deal.md', at)).status, 200);
  assert.is((await agree(server, seller, workspaceId, 'deal.md', at2)).status, 200);
  const last = await agree(server, seller, workspaceId, 'deal.md', at);
  assert.is(last.status, 200, JSON.stringify(last.body));
  const deal = await dealOf(server, buyer, workspaceId, 'deal.md');
  const agreedTo = deal.agreements.filter((a) => a.version === 1).map((a) => a.agent_id);
  assert.equal(
    agreedTo.sort(),
    [buyer.agent_id, seller.agent_id].sort(),
    'both agreed to version 1',
  );
  assert.is(
    deal.status,
    'agreed',
    `every party of version 1 agreed to it, yet the deal is ${deal.status} (round ${JSON.stringify(deal.round)})`,
  );
  assert.is(deal.agreed?.version, 1);
});

// ---------------------------------------------------------------------------------------------
// Changes

test('deal.agreed, deal.delivered and deal.rated reach every party, with the one that completes the round marked agreed', async ({
  server,
}) => {
  const { workspaceId, agents, at } = await dealRoom(server, 3, 3);
  const [a, b, c] = agents as [Agent, Agent, Agent];
  const dealId = await agreeAll(server, [a, b, c], workspaceId, at);
  await save(server, c, workspaceId, 'work.txt', 'done');
  for (const agent of agents) await newChanges(server, agent);
  const delivered = await deliver(server, c, dealId, ['work.txt'], 'here');
  assert.is(delivered.status, 201);
  const rated = await rate(server, a, dealId, c, { score: 3 });
  assert.is(rated.status, 201);
  for (const agent of agents) {
    const changes = await newChanges(server, agent);
    assert.equal(
      ofType(changes, 'deal.delivered').map((ch) => [ch.workspace_id, ch.actor?.agent_id, ch.data]),
      [
        [
          workspaceId,
          c.agent_id,
          {
            deal_id: dealId,
            delivery_id: delivered.body.delivery_id,
            files: delivered.body.files,
            note: 'here',
          },
        ],
      ],
      `${agent.name} hears the delivery`,
    );
    assert.equal(
      ofType(changes, 'deal.rated').map((ch) => [ch.actor?.agent_id, ch.data]),
      [
        [
          a.agent_id,
          {
            deal_id: dealId,
            rating_id: rated.body.rating_id,
            rater: a.agent_id,
            ratee: c.agent_id,
            supersedes: null,
          },
        ],
      ],
      `${agent.name} hears the rating`,
    );
  }
});

test('each agreement reaches every party as deal.agreed, data.agreed true only on the last', async ({
  server,
}) => {
  const { workspaceId, agents, at } = await dealRoom(server, 4, 3);
  const [a, b, c, onlooker] = agents as [Agent, Agent, Agent, Agent];
  const dealId = await agreeAll(server, [b, a, c], workspaceId, at);
  for (const agent of [a, b, c]) {
    const heard = ofType(await newChanges(server, agent), 'deal.agreed');
    assert.equal(
      heard.map((ch) => [ch.workspace_id, ch.actor?.agent_id, ch.data]),
      [b, a, c].map((by, i) => [
        workspaceId,
        by.agent_id,
        {
          deal_id: dealId,
          path: 'deal.md',
          version: 1,
          sha256: at.sha256,
          agent_id: by.agent_id,
          agreed: i === 2,
          status: i === 2 ? 'agreed' : 'draft',
        },
      ]),
      `${agent.name} hears every agreement`,
    );
  }
  assert.equal(
    ofType(await newChanges(server, onlooker), 'deal.agreed'),
    [],
    'a member who is no party hears none',
  );
});

// ---------------------------------------------------------------------------------------------
// Reputation

test('reputation counts agreed deals once each, its distinct counterparties and only the standing ratings; a correction supersedes the old one', async ({
  server,
}) => {
  const maker = await server.signUp();
  const fresh = await reputationOf(server, maker);
  assert.equal(fresh.counts, {
    deals_agreed: 0,
    payments_made: 0,
    payments_received: 0,
    payment_backed_ratings: 0,
    offchain_payments_confirmed: 0,
    distinct_counterparties: 0,
  });
  assert.equal([fresh.counterparties, fresh.ratings, fresh.payments], [[], [], []]);

  const workspaceId = await newWorkspace(server, maker);
  const clients: Agent[] = [];
  for (let i = 0; i < 2; i++) {
    const client = await server.signUp();
    await joinWorkspace(server, maker, client, workspaceId);
    clients.push(client);
  }
  const [regular, once] = clients as [Agent, Agent];
  // Two deals with `regular` (one of them agreed in two rounds), one with `once`, and a draft.
  const deals: string[] = [];
  for (const [path, other] of [
    ['one.md', regular],
    ['two.md', regular],
    ['three.md', once],
  ] as const) {
    const text = dealText(path, [lineOf(maker, 0), lineOf(other, 1)]);
    await save(server, maker, workspaceId, path, text);
    deals.push(
      await agreeAll(
        server,
        [maker, other],
        workspaceId,
        await listed(server, maker, workspaceId, path),
        path,
      ),
    );
  }
  await save(
    server,
    maker,
    workspaceId,
    'one.md',
    dealText('one, again', [lineOf(maker, 0), lineOf(regular, 1)]),
  );
  await agreeAll(
    server,
    [maker, regular],
    workspaceId,
    await listed(server, maker, workspaceId, 'one.md'),
    'one.md',
  );
  await save(
    server,
    maker,
    workspaceId,
    'draft.md',
    dealText('draft', [lineOf(maker, 0), lineOf(once, 1)]),
  );
  assert.is(
    (
      await agree(
        server,
        maker,
        workspaceId,
        'draft.md',
        await listed(server, maker, workspaceId, 'draft.md'),
      )
    ).status,
    200,
  );

  const [oneId, twoId, threeId] = deals as [string, string, string];
  const first = await rate(server, regular, oneId, maker, { score: 2, comment: 'late' });
  assert.is(first.status, 201);
  const correction = await rate(server, regular, oneId, maker, {
    score: 4,
    comment: 'late, but fixed',
  });
  assert.is(correction.status, 201);
  assert.is(
    correction.body.supersedes,
    first.body.rating_id,
    'the answer names what it supersedes',
  );
  const other = await rate(server, once, threeId, maker, { delivered_can: false });
  assert.is(other.status, 201);
  // A rating the maker gave is not one it received.
  assert.is((await rate(server, maker, twoId, regular)).status, 201);

  const one = await dealOf(server, maker, workspaceId, 'one.md');
  assert.equal(
    one.ratings.map((r) => [r.rating_id, r.score, r.superseded_by]),
    [
      [first.body.rating_id, 2, correction.body.rating_id],
      [correction.body.rating_id, 4, null],
    ],
    'the old rating stays on record with superseded_by',
  );

  const shown = await reputationOf(server, maker);
  assert.equal([shown.agent_id, shown.name], [maker.agent_id, maker.name]);
  assert.equal(shown.counts, {
    deals_agreed: 3,
    payments_made: 0,
    payments_received: 0,
    payment_backed_ratings: 0,
    offchain_payments_confirmed: 0,
    distinct_counterparties: 2,
  });
  assert.equal(shown.counterparties, [
    { agent_id: regular.agent_id, name: regular.name, deals_agreed: 2, payments_final: 0 },
    { agent_id: once.agent_id, name: once.name, deals_agreed: 1, payments_final: 0 },
  ]);
  assert.equal(
    shown.ratings.map((r) => [
      r.rating_id,
      r.deal_id,
      r.rater,
      r.delivered_can,
      r.score,
      r.comment,
      r.payment_backed,
    ]),
    [
      [
        other.body.rating_id,
        threeId,
        { agent_id: once.agent_id, name: once.name },
        false,
        null,
        null,
        false,
      ],
      [
        correction.body.rating_id,
        oneId,
        { agent_id: regular.agent_id, name: regular.name },
        true,
        4,
        'late, but fixed',
        false,
      ],
    ],
    'only the standing ratings, newest first',
  );
  const theirs = await reputationOf(server, regular);
  assert.equal([theirs.counts.deals_agreed, theirs.counts.distinct_counterparties], [2, 1]);
  assert.equal(
    theirs.ratings.map((r) => r.rater.agent_id),
    [maker.agent_id],
  );
  assert.is((await call(server, 'GET', `/agents/${randomUUID()}/reputation`, null)).status, 404);
});

// ---------------------------------------------------------------------------------------------
// Refusals

test('agreeing as a member who is not a party of that version answers 403 and records nothing', async ({
  server,
}) => {
  const { workspaceId, agents, at } = await dealRoom(server, 3, 2);
  const [, , outsider] = agents as [Agent, Agent, Agent];
  const refused = await agree(server, outsider, workspaceId, 'deal.md', at);
  assert.is(refused.status, 403, JSON.stringify(refused.body));
  assert.is(problemOf(refused).code, 'forbidden');
  const deal = await dealOf(server, outsider, workspaceId, 'deal.md');
  assert.equal([deal.status, deal.agreements], ['draft', []]);
});

test('agreeing to a version that is not there answers 409 deal_version_mismatch with the current version', async ({
  server,
}) => {
  const { workspaceId, agents, parties, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  const newer = dealText('Changed', parties.map(lineOf));
  await save(server, seller, workspaceId, 'deal.md', newer);
  const at2 = await listed(server, seller, workspaceId, 'deal.md');
  const ahead = await agree(server, buyer, workspaceId, 'deal.md', {
    version: 3,
    sha256: at2.sha256,
  });
  assert.is(ahead.status, 409, JSON.stringify(ahead.body));
  assert.equal(
    [problemOf(ahead).code, problemOf(ahead).current_version, problemOf(ahead).current_sha256],
    ['deal_version_mismatch', 2, at2.sha256],
  );
  // Version 2's number with version 1's fingerprint: what an agent that read before the save sends.
  const stale = await agree(server, buyer, workspaceId, 'deal.md', {
    version: 2,
    sha256: at.sha256,
  });
  assert.is(stale.status, 409, JSON.stringify(stale.body));
  assert.equal(
    [problemOf(stale).code, problemOf(stale).sha256],
    ['deal_version_mismatch', at2.sha256],
  );
  const deal = await dealOf(server, buyer, workspaceId, 'deal.md');
  assert.equal([deal.deal_id, deal.agreements], [null, []]);
});

test('agreeing with a wrong sha256 answers 409 deal_version_mismatch naming the right one', async ({
  server,
}) => {
  const { workspaceId, agents, at } = await dealRoom(server);
  const wrong = await agree(server, agents[0] as Agent, workspaceId, 'deal.md', {
    version: at.version,
    sha256: sha256Hex('something else'),
  });
  assert.is(wrong.status, 409, JSON.stringify(wrong.body));
  assert.equal(
    [problemOf(wrong).code, problemOf(wrong).sha256],
    ['deal_version_mismatch', at.sha256],
  );
});

test('agreeing to a file without a valid deal header answers 422 deal_invalid', async ({
  server,
}) => {
  const { workspaceId, agents } = await room(server, 2);
  const [buyer, seller] = agents as [Agent, Agent];
  const cases: [string, string][] = [
    ['plain.md', 'No header at all, just text.'],
    ['notes.txt', 'not markdown'],
    ['broken.md', '---\ndeal: [unclosed\n---\nbody'],
    ['untitled.md', dealText(null, [lineOf(buyer, 0), lineOf(seller, 1)])],
    ['vague.md', dealText('vague', [lineOf(buyer, 0), { ...lineOf(seller, 1), can: '' }])],
    ['twice.md', dealText('twice', [lineOf(buyer, 0), lineOf(buyer, 1)])],
  ];
  for (const [path, body] of cases) {
    await save(server, buyer, workspaceId, path, body);
    const refused = await agree(
      server,
      buyer,
      workspaceId,
      path,
      await listed(server, buyer, workspaceId, path),
    );
    assert.is(refused.status, 422, `${path}: ${JSON.stringify(refused.body)}`);
    assert.is(problemOf(refused).code, 'deal_invalid', path);
  }
  const untitled = await agree(
    server,
    buyer,
    workspaceId,
    'untitled.md',
    await listed(server, buyer, workspaceId, 'untitled.md'),
  );
  assert.equal(
    problemOf(untitled).problems?.map((p) => p.field),
    ['deal'],
  );
  const vague = await agree(
    server,
    buyer,
    workspaceId,
    'vague.md',
    await listed(server, buyer, workspaceId, 'vague.md'),
  );
  assert.equal(
    problemOf(vague).problems?.map((p) => p.field),
    ['parties[1].can'],
  );
});

test('a header naming agents that are not signed up answers 422 deal_invalid naming them', async ({
  server,
}) => {
  const { workspaceId, agents } = await room(server, 2);
  const [buyer, seller] = agents as [Agent, Agent];
  const ghosts = [randomUUID(), randomUUID()];
  const text = dealText('with ghosts', [
    lineOf(buyer, 0),
    lineOf(seller, 1),
    ...ghosts.map((agent_id, i) => lineOf({ agent_id }, i + 2)),
  ]);
  await save(server, buyer, workspaceId, 'deal.md', text);
  const refused = await agree(
    server,
    buyer,
    workspaceId,
    'deal.md',
    await listed(server, buyer, workspaceId, 'deal.md'),
  );
  assert.is(refused.status, 422, JSON.stringify(refused.body));
  const problem = problemOf(refused);
  assert.is(problem.code, 'deal_invalid');
  for (const ghost of ghosts)
    assert.ok(problem.detail.includes(ghost), `the detail names ${ghost}`);
  assert.not.ok(problem.detail.includes(buyer.agent_id), 'and only them');
  assert.equal(
    problem.problems?.map((p) => p.field),
    ['parties'],
  );
  for (const ghost of ghosts) assert.ok(problem.problems?.[0]?.problem.includes(ghost));
});

test('a header with one party answers 422 deal_invalid', async ({ server }) => {
  const { workspaceId, agents } = await room(server, 2);
  const [buyer] = agents as [Agent];
  await save(server, buyer, workspaceId, 'solo.md', dealText('alone', [lineOf(buyer, 0)]));
  const refused = await agree(
    server,
    buyer,
    workspaceId,
    'solo.md',
    await listed(server, buyer, workspaceId, 'solo.md'),
  );
  assert.is(refused.status, 422, JSON.stringify(refused.body));
  assert.is(problemOf(refused).code, 'deal_invalid');
  assert.equal(
    problemOf(refused).problems?.map((p) => p.field),
    ['parties'],
  );
});

test('delivering files that are not saved answers 422 delivery_invalid naming them, and records nothing', async ({
  server,
}) => {
  const { workspaceId, agents, parties, at } = await dealRoom(server);
  const [, seller] = agents as [Agent, Agent];
  const dealId = await agreeAll(server, parties, workspaceId, at);
  await save(server, seller, workspaceId, 'there.txt', 'here');
  const refused = await deliver(server, seller, dealId, [
    'there.txt',
    'missing/a.txt',
    'missing/b.txt',
  ]);
  assert.is(refused.status, 422, JSON.stringify(refused.body));
  assert.equal(
    [problemOf(refused).code, problemOf(refused).paths],
    ['delivery_invalid', ['missing/a.txt', 'missing/b.txt']],
  );
  assert.ok(problemOf(refused).detail.includes('missing/a.txt'));
  const deal = await dealOf(server, seller, workspaceId, 'deal.md');
  assert.equal([deal.status, deal.deliveries], ['agreed', []]);
});

test('delivering a path outside the workspace answers 400 invalid_path', async ({ server }) => {
  const { workspaceId, agents, parties, at } = await dealRoom(server);
  const [, seller] = agents as [Agent, Agent];
  const dealId = await agreeAll(server, parties, workspaceId, at);
  for (const path of ['../x', 'a/../../x', '/etc/passwd']) {
    const refused = await deliver(server, seller, dealId, ['deal.md', path]);
    assert.is(refused.status, 400, `${path}: ${JSON.stringify(refused.body)}`);
    assert.equal(
      [problemOf(refused).code, problemOf(refused).field],
      ['invalid_path', 'files[1]'],
      path,
    );
  }
});

test('delivering or rating before every party agreed answers 409 deal_not_agreed', async ({
  server,
}) => {
  const { workspaceId, agents, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  const first = await agree(server, buyer, workspaceId, 'deal.md', at);
  const dealId = first.body.deal_id;
  const delivered = await deliver(server, buyer, dealId, ['deal.md']);
  assert.is(delivered.status, 409, JSON.stringify(delivered.body));
  assert.is(problemOf(delivered).code, 'deal_not_agreed');
  for (const [rater, ratee] of [
    [buyer, seller],
    [seller, buyer],
  ] as const) {
    const rated = await rate(server, rater, dealId, ratee);
    assert.is(rated.status, 409, JSON.stringify(rated.body));
    assert.is(problemOf(rated).code, 'deal_not_agreed');
  }
  const deal = await dealOf(server, buyer, workspaceId, 'deal.md');
  assert.equal([deal.status, deal.deliveries, deal.ratings], ['draft', [], []]);
});

test('rating yourself or an agent that is not a party answers 400 invalid_input', async ({
  server,
}) => {
  const { workspaceId, agents, parties, at } = await dealRoom(server, 3, 2);
  const [buyer, , member] = agents as [Agent, Agent, Agent];
  const dealId = await agreeAll(server, parties, workspaceId, at);
  const self = await rate(server, buyer, dealId, buyer);
  assert.is(self.status, 400, JSON.stringify(self.body));
  assert.equal([problemOf(self).code, problemOf(self).field], ['invalid_input', 'agent_id']);
  for (const ratee of [member, { agent_id: randomUUID() }]) {
    const refused = await rate(server, buyer, dealId, ratee);
    assert.is(refused.status, 400, JSON.stringify(refused.body));
    assert.equal(
      [problemOf(refused).code, problemOf(refused).field],
      ['invalid_input', 'agent_id'],
    );
  }
  // A member who is no party may not rate a party either.
  const byMember = await rate(server, member, dealId, buyer);
  assert.is(byMember.status, 403, JSON.stringify(byMember.body));
  assert.equal((await dealOf(server, buyer, workspaceId, 'deal.md')).ratings, []);
});

test('a stranger gets the same 404 for a deal of a private workspace as for one that does not exist', async ({
  server,
}) => {
  const { workspaceId, parties, at } = await dealRoom(server);
  const dealId = await agreeAll(server, parties, workspaceId, at);
  const stranger = await server.signUp();
  const hidden = await getDeal(server, stranger, workspaceId, 'deal.md');
  const missing = await getDeal(server, stranger, randomUUID(), 'deal.md');
  assert.is(hidden.status, 404);
  assert.equal(hidden.body, missing.body, 'byte for byte the same refusal');
  for (const answer of [
    await deliver(server, stranger, dealId, ['deal.md']),
    await rate(server, stranger, dealId, parties[0] as Agent),
    await agree(server, stranger, workspaceId, 'deal.md', at),
  ]) {
    assert.is(answer.status, 404, JSON.stringify(answer.body));
  }
  assert.equal((await deliver(server, stranger, randomUUID(), ['deal.md'])).status, 404);
});

// ---------------------------------------------------------------------------------------------
// Concurrency

test('three parties agreeing all at once make the deal agreed exactly once', async ({ server }) => {
  // Several deals, each raced once: one race alone might not overlap at all.
  for (let round = 0; round < 5; round++) {
    const { workspaceId, agents, at } = await dealRoom(server, 3, 3);
    const answers = await Promise.all(
      agents.map((agent) => agree(server, agent, workspaceId, 'deal.md', at)),
    );
    assert.equal(
      answers.map((a) => a.status),
      [200, 200, 200],
      JSON.stringify(answers.map((a) => a.body)),
    );
    const dealIds = new Set(answers.map((a) => a.body.deal_id));
    assert.is(dealIds.size, 1, 'one deal');
    assert.equal(
      answers.map((a) => a.body.status).filter((s) => s === 'agreed').length,
      1,
      'exactly one agreement answers agreed',
    );
    for (const agent of agents) {
      const heard = ofType(await newChanges(server, agent), 'deal.agreed');
      assert.is(heard.length, 3, `${agent.name} hears each agreement`);
      assert.is(
        heard.filter((c) => c.data.agreed === true).length,
        1,
        `${agent.name}: agreed once`,
      );
    }
    const deal = await dealOf(server, agents[0] as Agent, workspaceId, 'deal.md');
    assert.is(deal.status, 'agreed');
    assert.equal([...(deal.agreed?.agreed ?? [])].sort(), agents.map((a) => a.agent_id).sort());
    assert.is(deal.agreements.length, 3);
    chainOrder(await allReceipts(server, agents[0] as Agent, workspaceId, ['deal.md']));
  }
});

// ---------------------------------------------------------------------------------------------
// MCP

test('agree, deliver, rate and get_deal through the MCP SDK client answer as HTTP does', async (context) => {
  const { server } = context;
  const { workspaceId, agents, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  const buyerClient = await mcpClient(context, buyer.api_token);
  const sellerClient = await mcpClient(context, seller.api_token);

  const draft = await tool(buyerClient, 'get_deal', { workspace_id: workspaceId, path: 'deal.md' });
  assert.not.ok(draft.isError, JSON.stringify(draft));
  assert.equal(
    draft.structuredContent,
    (await getDeal(server, buyer, workspaceId, 'deal.md')).body,
  );

  const first = await tool(buyerClient, 'agree', {
    workspace_id: workspaceId,
    path: 'deal.md',
    version: at.version,
    sha256: at.sha256,
  });
  assert.not.ok(first.isError, JSON.stringify(first));
  const agreed = first.structuredContent as unknown as Agreed;
  assert.is(agreed.status, 'draft');
  const second = await tool(sellerClient, 'agree', {
    workspace_id: workspaceId,
    path: 'deal.md',
    version: at.version,
    sha256: at.sha256,
  });
  assert.not.ok(second.isError, JSON.stringify(second));
  assert.equal(second.structuredContent?.status, 'agreed');
  const dealId = agreed.deal_id;

  const delivered = await tool(sellerClient, 'deliver', { deal_id: dealId, files: ['deal.md'] });
  assert.not.ok(delivered.isError, JSON.stringify(delivered));
  const rated = await tool(buyerClient, 'rate', {
    deal_id: dealId,
    agent_id: seller.agent_id,
    delivered_can: true,
    accepted_on_need: true,
    score: 5,
  });
  assert.not.ok(rated.isError, JSON.stringify(rated));

  const overHttp = await dealOf(server, buyer, workspaceId, 'deal.md');
  const overMcp = await tool(sellerClient, 'get_deal', {
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

  const selfOverMcp = await tool(buyerClient, 'rate', {
    deal_id: dealId,
    agent_id: buyer.agent_id,
    delivered_can: true,
    accepted_on_need: true,
  });
  assert.ok(selfOverMcp.isError);
  const selfOverHttp = await rate(server, buyer, dealId, buyer);
  assert.equal(toolProblem(selfOverMcp), selfOverHttp.body, 'the same refusal through both doors');
  const staleOverMcp = await tool(buyerClient, 'agree', {
    workspace_id: workspaceId,
    path: 'deal.md',
    version: 9,
    sha256: at.sha256,
  });
  assert.ok(staleOverMcp.isError);
  assert.is(toolProblem(staleOverMcp).code, 'deal_version_mismatch');
});

test.run();
