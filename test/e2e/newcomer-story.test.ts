import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sha256 } from '../helpers/digests.ts';
import {
  documentedCall,
  promised,
  readDocumentation,
  type DocumentedRequest,
  type Documentation,
} from '../helpers/documented-routes.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { Change, Json } from '../helpers/wire-types.ts';

/**
 * Two newcomers who know nothing but the address use the service end to end, reading only
 * /llms.txt and what it links: sign up, list, find, knock, talk, agree a deal, deliver, rate,
 * check reputation. Every request goes through documentedCall, which refuses a route or a field
 * the documents do not name; every answer field the story reads must be named there too. So
 * the story passes only while the documents are enough, and true.
 */
const test = suite<{ server: TestServer; docs: Documentation }>(
  'a newcomer who reads only /llms.txt and what it links',
);

test.before(async (context) => {
  context.server = await startTestServer();
  context.docs = await readDocumentation(context.server.baseUrl);
});
test.after(async ({ server }) => {
  await server.close();
});

/** A signed-up newcomer: its token, and the changes it has read but not yet used. */
interface Newcomer {
  agent_id: string;
  name: string;
  token: string;
  unread: Change[];
}

test('two newcomers sign up, list, find, knock, talk, agree a deal, deliver, rate and see the reputation', async ({
  docs,
}) => {
  const call = <T = Json>(method: string, path: string, request: DocumentedRequest = {}) =>
    documentedCall<T>(docs, method, path, request);
  /** Reads the fields of an object the documents promise (asserting each is there). */
  const read = (object: unknown, where: string, ...fields: string[]) =>
    promised(docs, object, where, ...fields);

  /** Sign up as llms.txt's quick start shows: `201` with the token, shown once. */
  async function signUp(name: string): Promise<Newcomer> {
    const answer = await call('POST', '/agents', { json: { name } });
    assert.is(answer.status, 201, JSON.stringify(answer.body));
    const body = read(answer.body, 'sign_up', 'agent_id', 'name', 'api_token');
    assert.match(body.api_token as string, /^asvc_/);
    return {
      agent_id: body.agent_id as string,
      name: body.name as string,
      token: body.api_token as string,
      unread: [],
    };
  }

  /**
   * The first change of `type` that `matches`, from what the agent read already or by
   * long-polling `GET /changes/wait` as the protocol shows (no sleeps: the wait answers when
   * the event arrives). Bounded: a promised event that never comes fails the test.
   */
  async function heard(
    agent: Newcomer,
    type: string,
    matches: (data: Json) => boolean = () => true,
  ) {
    assert.ok(
      [...docs.texts.values()].some((text) => text.includes(`\`${type}\``)),
      `the documents promise no \`${type}\` change`,
    );
    for (let polls = 0; polls < 20; polls += 1) {
      const found = agent.unread.findIndex((c) => c.type === type && matches(c.data));
      if (found >= 0) return (agent.unread.splice(found, 1)[0] as Change).data;
      const page = await call('GET', '/changes/wait?timeout=10', { token: agent.token });
      assert.is(page.status, 200, JSON.stringify(page.body));
      const { changes } = read(page.body, 'wait_for_changes', 'changes', 'cursor');
      for (const change of changes as Change[]) {
        read(change, `a ${change.type} change`, 'event_id', 'type', 'data');
        agent.unread.push(change);
      }
    }
    throw new Error(`${agent.name} never heard ${type}`);
  }

  // A, who makes logos, signs up and checks its token.
  const maker = await signUp('logo-maker');
  const whoami = await call('GET', '/whoami', { token: maker.token });
  assert.is(whoami.status, 200);
  assert.is(read(whoami.body, 'whoami', 'agent_id', 'service_version').agent_id, maker.agent_id);

  // It picks the convention llms.txt names for work done by agents, and reads its dimensions.
  const convention = await call('GET', '/conventions/agent-services', {
    accept: 'application/json',
  });
  assert.is(convention.status, 200, JSON.stringify(convention.body));
  const { dimensions } = read(convention.body, 'get_convention', 'dimensions');
  const dimensionKeys = (dimensions as Json[]).map((d) => read(d, 'a dimension', 'key').key);
  for (const key of ['task_type', 'payment']) assert.ok(dimensionKeys.includes(key), key);

  // A posts a Can, B a Need, as llms.txt's example shows.
  const can = await call('POST', '/listings', {
    token: maker.token,
    json: {
      kind: 'can',
      convention: 'agent-services',
      name: 'Logos for agents',
      description: 'A logo in SVG and PNG, two drafts, 48 h',
      can: 'Draw a logo in SVG and PNG',
      dimensions: { task_type: 'logo design', payment: '20 USDC per logo' },
    },
  });
  assert.is(can.status, 201, JSON.stringify(can.body));
  const canListing = read(can.body, 'post_listing', 'listing_id', 'workspace_id', 'matches');

  const buyer = await signUp('translation-bot');
  const need = await call('POST', '/listings', {
    token: buyer.token,
    json: {
      kind: 'need',
      convention: 'agent-services',
      name: 'A logo for a translation bot',
      description: 'Something friendly, SVG',
      need: 'A logo in SVG and PNG',
      dimensions: { task_type: 'logo design', payment: '20 USDC' },
    },
  });
  assert.is(need.status, 201, JSON.stringify(need.body));
  read(need.body, 'post_listing', 'listing_id', 'matches');

  // B finds A's listing in the store (JSON, with its token), with its author.
  const store = await call<Json>('GET', '/store?convention=agent-services&kind=can&q=logo', {
    token: buyer.token,
    accept: 'application/json',
  });
  assert.is(store.status, 200, JSON.stringify(store.body));
  const { listings } = read(store.body, 'read_store', 'listings', 'next_cursor');
  const found = (listings as Json[]).find((l) => l.listing_id === canListing.listing_id);
  assert.ok(found, "A's listing is in the store");
  const author = read(
    found,
    'a store listing',
    'author',
    'workspace_id',
    'agent_written',
    'reputation',
  ).author;
  assert.is(read(author, 'a listing author', 'agent_id').agent_id, maker.agent_id);

  // B knocks on A with a note.
  const knock = await call('POST', `/agents/${maker.agent_id}/knock`, {
    token: buyer.token,
    json: { note: 'I need a logo by Friday, 20 USDC' },
  });
  assert.is(knock.status, 201, JSON.stringify(knock.body));
  const knocked = read(knock.body, 'knock_agent', 'knock_id', 'status');
  assert.is(knocked.status, 'pending');

  // A hears of it, lists its knocks and accepts: the answer is a workspace for both.
  const received = read(
    await heard(maker, 'knock.received', (d) => d.knock_id === knocked.knock_id),
    'knock.received',
    'knock_id',
    'note',
    'from',
  );
  assert.is(received.note, 'I need a logo by Friday, 20 USDC');
  const incoming = await call<Json>('GET', '/knocks?direction=incoming', { token: maker.token });
  assert.is(incoming.status, 200, JSON.stringify(incoming.body));
  const knocks = read(incoming.body, 'list_knocks', 'knocks', 'next_cursor').knocks as Json[];
  const listed = knocks.find((k) => k.knock_id === knocked.knock_id);
  const knockOnA = read(listed, 'a listed knock', 'from', 'note', 'status');
  assert.is(read(knockOnA.from, 'a knock from', 'agent_id').agent_id, buyer.agent_id);
  assert.is(knockOnA.status, 'pending');
  const accepted = await call('POST', `/knocks/${knocked.knock_id as string}/accept`, {
    token: maker.token,
  });
  assert.is(accepted.status, 200, JSON.stringify(accepted.body));
  const shared = read(accepted.body, 'accept_knock', 'knock_id', 'status', 'workspace_id');
  assert.is(shared.status, 'accepted');
  const workspaceId = shared.workspace_id as string;
  const acceptedHeard = read(
    await heard(buyer, 'knock.accepted'),
    'knock.accepted',
    'workspace_id',
  );
  assert.is(acceptedHeard.workspace_id, workspaceId);

  // They talk there.
  const hello = await call('POST', `/workspaces/${workspaceId}/messages`, {
    token: buyer.token,
    json: { text: 'Hello! The deal file follows.' },
  });
  assert.is(hello.status, 201, JSON.stringify(hello.body));
  const helloId = read(hello.body, 'send_message', 'message_id', 'sender', 'text').message_id;
  const helloHeard = read(
    await heard(maker, 'message.sent', (d) => d.message_id === helloId),
    'message.sent',
    'message_id',
    'text',
  );
  assert.is(helloHeard.text, 'Hello! The deal file follows.');
  const page = await call<Json>('GET', `/workspaces/${workspaceId}/messages`, {
    token: maker.token,
  });
  assert.is(page.status, 200, JSON.stringify(page.body));
  const messages = read(page.body, 'read_messages', 'messages', 'next_after').messages as Json[];
  const first = read(messages[0], 'a message', 'message_id', 'sender', 'text');
  assert.is(first.message_id, helloId);
  assert.is(read(first.sender, 'a message sender', 'agent_id').agent_id, buyer.agent_id);
  const reply = await call('POST', `/workspaces/${workspaceId}/messages`, {
    token: maker.token,
    json: { text: 'Thanks, I will agree once it is there.' },
  });
  assert.is(reply.status, 201, JSON.stringify(reply.body));
  await heard(buyer, 'message.sent', (d) => d.message_id === (reply.body as Json).message_id);

  // B writes the deal file exactly as /deals/protocol shows it, with their own agent ids.
  const example = /```yaml\n([\s\S]*?)```/.exec(docs.texts.get('/deals/protocol') ?? '')?.[1];
  assert.ok(example, '/deals/protocol shows a deal file');
  assert.match(example, /agent_id: 6f1c\.\.\./);
  assert.match(example, /agent_id: 93ab\.\.\./);
  // The example's first party needs money and can draw: the maker; the second, the buyer.
  const dealText = example
    .replace('agent_id: 6f1c...', `agent_id: ${maker.agent_id}`)
    .replace('agent_id: 93ab...', `agent_id: ${buyer.agent_id}`);
  const saved = await call('PUT', `/workspaces/${workspaceId}/files/deal.md`, {
    token: buyer.token,
    bytes: dealText,
  });
  assert.is(saved.status, 201, JSON.stringify(saved.body));
  const receipt = read(
    read(saved.body, 'write_file', 'receipt').receipt,
    'a receipt',
    'version',
    'sha256',
  );
  assert.is(receipt.sha256, sha256(dealText));
  const at = { version: receipt.version as number, sha256: receipt.sha256 as string };

  // A hears of the save, as every member does.
  const savedHeard = read(
    await heard(maker, 'file.saved', (d) => d.path === 'deal.md'),
    'file.saved',
    'path',
    'version',
    'sha256',
  );
  assert.equal({ version: savedHeard.version, sha256: savedHeard.sha256 }, at);

  // Both agree to that version: B with its receipt, A with what list_files shows.
  const agreeTo = (agent: Newcomer, version: { version: number; sha256: string }) =>
    call('POST', '/deals/agree', {
      token: agent.token,
      json: { workspace_id: workspaceId, path: 'deal.md', ...version },
    });
  const buyerAgrees = await agreeTo(buyer, at);
  assert.is(buyerAgrees.status, 200, JSON.stringify(buyerAgrees.body));
  const draft = read(buyerAgrees.body, 'agree', 'deal_id', 'status', 'agreement');
  assert.is(draft.status, 'draft');
  const dealId = draft.deal_id as string;
  const agreedHeard = read(
    await heard(maker, 'deal.agreed', (d) => d.deal_id === dealId),
    'deal.agreed',
    'version',
    'sha256',
    'agreed',
  );
  assert.is(agreedHeard.agreed, false);
  const files = await call<Json>('GET', `/workspaces/${workspaceId}/files?prefix=deal.md`, {
    token: maker.token,
  });
  assert.is(files.status, 200, JSON.stringify(files.body));
  const file = read(
    (read(files.body, 'list_files', 'files').files as Json[])[0],
    'a listed file',
    'path',
    'version',
    'sha256',
  );
  assert.equal({ version: file.version, sha256: file.sha256 }, at);
  const makerAgrees = await agreeTo(maker, at);
  assert.is(makerAgrees.status, 200, JSON.stringify(makerAgrees.body));
  assert.is(read(makerAgrees.body, 'agree', 'status').status, 'agreed');
  await heard(buyer, 'deal.agreed', (d) => d.deal_id === dealId && d.agreed === true);

  // A delivers the logo; B hears of it and reads it.
  const logo = '<svg xmlns="http://www.w3.org/2000/svg"><circle r="9"/></svg>';
  const logoSaved = await call('PUT', `/workspaces/${workspaceId}/files/logo.svg`, {
    token: maker.token,
    bytes: logo,
  });
  assert.is(logoSaved.status, 201, JSON.stringify(logoSaved.body));
  const delivered = await call('POST', '/deals/deliver', {
    token: maker.token,
    json: { deal_id: dealId, files: ['logo.svg'], note: 'SVG as agreed' },
  });
  assert.is(delivered.status, 201, JSON.stringify(delivered.body));
  const delivery = read(delivered.body, 'deliver', 'delivery_id', 'files', 'receipt');
  const pinned = read((delivery.files as Json[])[0], 'a delivered file', 'path', 'sha256');
  assert.is(pinned.sha256, sha256(logo));
  await heard(buyer, 'deal.delivered', (d) => d.delivery_id === delivery.delivery_id);
  const fetched = await call<string>('GET', `/workspaces/${workspaceId}/files/logo.svg`, {
    token: buyer.token,
  });
  assert.is(fetched.status, 200);
  assert.is(fetched.body, logo);
  const mine = await call<Json>('GET', '/deals/mine', { token: buyer.token });
  assert.is(mine.status, 200, JSON.stringify(mine.body));
  const deals = read(mine.body, 'list_deals', 'deals', 'next_cursor').deals as Json[];
  const listedDeal = deals.find((d) => d.deal_id === dealId);
  assert.is(read(listedDeal, 'a listed deal', 'status').status, 'delivered');

  // Each rates the other; the deal is then closed.
  const rate = (rater: Newcomer, ratee: Newcomer, comment: string) =>
    call('POST', '/deals/rate', {
      token: rater.token,
      json: {
        deal_id: dealId,
        agent_id: ratee.agent_id,
        delivered_can: true,
        accepted_on_need: true,
        score: 5,
        comment,
      },
    });
  const rated = await rate(buyer, maker, 'Lovely logo, on time');
  assert.is(rated.status, 201, JSON.stringify(rated.body));
  const rating = read(rated.body, 'rate', 'rating_id', 'payment_backed', 'supersedes', 'receipt');
  assert.is(rating.payment_backed, false);
  await heard(maker, 'deal.rated', (d) => d.rating_id === rating.rating_id);
  const ratedBack = await rate(maker, buyer, 'Clear brief, quick answers');
  assert.is(ratedBack.status, 201, JSON.stringify(ratedBack.body));
  await heard(buyer, 'deal.rated', (d) => d.rating_id === (ratedBack.body as Json).rating_id);
  const closed = await call<Json>('GET', '/deals/mine', { token: maker.token });
  const closedDeal = (read(closed.body, 'list_deals', 'deals').deals as Json[]).find(
    (d) => d.deal_id === dealId,
  );
  assert.is(read(closedDeal, 'a listed deal', 'status').status, 'closed');

  // Anyone, without a token, reads A's public record: one deal, B's rating.
  const record = await call('GET', `/agents/${maker.agent_id}/reputation`);
  assert.is(record.status, 200, JSON.stringify(record.body));
  const reputation = read(record.body, 'get_reputation', 'counts', 'ratings');
  const counts = read(
    reputation.counts,
    'reputation counts',
    'deals_agreed',
    'distinct_counterparties',
  );
  assert.is(counts.deals_agreed, 1);
  assert.is(counts.distinct_counterparties, 1);
  const ratings = reputation.ratings as Json[];
  assert.is(ratings.length, 1);
  const standing = read(ratings[0], 'a rating', 'deal_id', 'rater', 'score', 'comment');
  assert.equal(
    { deal_id: standing.deal_id, score: standing.score, comment: standing.comment },
    { deal_id: dealId, score: 5, comment: 'Lovely logo, on time' },
  );
  assert.is(read(standing.rater, 'a rater', 'agent_id').agent_id, buyer.agent_id);

  // And the store shows the same count beside A's listing.
  const after = await call<Json>('GET', '/store?convention=agent-services&kind=can&q=logo', {
    accept: 'application/json',
  });
  const again = (read(after.body, 'read_store', 'listings').listings as Json[]).find(
    (l) => l.listing_id === canListing.listing_id,
  );
  const summary = read(
    read(again, 'a store listing', 'reputation').reputation,
    'a summary',
    'deals_agreed',
  );
  assert.is(summary.deals_agreed, 1);
});

test('a route the documents do not name fails the story, naming it', async ({ docs }) => {
  try {
    await documentedCall(docs, 'GET', '/agents/00000000-0000-4000-8000-000000000000/secrets');
  } catch (error) {
    assert.match(String(error), 'GET /agents/00000000-0000-4000-8000-000000000000/secrets');
    assert.match(String(error), 'not documented');
    return;
  }
  assert.unreachable('an undocumented route is refused');
});

test('a body field the documents do not name fails the story, naming it', async ({ docs }) => {
  try {
    await documentedCall(docs, 'POST', '/agents', { json: { name: 'x', nickname: 'y' } });
  } catch (error) {
    assert.match(String(error), '`nickname`');
    return;
  }
  assert.unreachable('an undocumented field is refused');
});

test.run();
