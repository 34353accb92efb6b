import * as assert from 'uvu/assert';
import { newChanges, ofType } from '../helpers/changes.ts';
import {
  agree,
  agreeAll,
  dealOf,
  dealRoom,
  dealText,
  deliver,
  lineOf,
  listed,
  rate,
} from '../helpers/deals.ts';
import { sha256 } from '../helpers/digests.ts';
import { callJson as call } from '../helpers/http.ts';
import {
  allReceipts,
  chainOrder,
  jwksOf,
  receiptHash,
  verifies,
} from '../helpers/receipt-chain.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { Agent, Receipt } from '../helpers/wire-types.ts';
import { saveFile } from '../helpers/workspaces.ts';

/**
 * Deals end to end, held to protocol/documents/deals-protocol.md: agreeing to an exact version
 * of a deal file, delivering, rating, the receipts anyone can verify with the published keys,
 * the changes every party hears, and racing agreements. Reputation, the refusals and MCP have
 * files of their own (deals-*.test.ts).
 */
const test = serverSuite('deals through HTTP');

// ---------------------------------------------------------------------------------------------
// The flow

test('two parties agree to the saved deal file, one delivers, both rate: draft, agreed, delivered, closed', async ({
  server,
}) => {
  const { workspaceId, agents, text, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  assert.equal(at, { version: 1, sha256: sha256(text), size: Buffer.byteLength(text) });

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

  await saveFile(server, seller, workspaceId, 'out/logo.svg', '<svg/>');
  await saveFile(server, seller, workspaceId, 'out/logo.png', 'PNG bytes');
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
  await saveFile(server, seller, workspaceId, 'out/logo.svg', '<svg version="2"/>');

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
    receipt: await saveFile(server, seller, workspaceId, 'work.txt', 'the work'),
    action: 'save',
  });
  const delivered = await deliver(server, seller, dealId, ['work.txt']);
  steps.push({ receipt: delivered.body.receipt, action: 'deliver' });
  const rated = await rate(server, buyer, dealId, seller, { score: 4 });
  steps.push({ receipt: rated.body.receipt, action: 'rate' });
  steps.push({
    receipt: await saveFile(server, buyer, workspaceId, 'notes.txt', 'thanks'),
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
      previous ? receiptHash(previous) : null,
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
  await saveFile(server, seller, workspaceId, 'deal.md', newer);
  const at2 = await listed(server, seller, workspaceId, 'deal.md');
  assert.equal([at2.version, at2.sha256], [2, sha256(newer)]);
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
  await saveFile(
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
  await saveFile(server, c, workspaceId, 'work.txt', 'done');
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

test.run();
