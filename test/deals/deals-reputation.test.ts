import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import {
  agree,
  agreeAll,
  dealOf,
  dealText,
  lineOf,
  listed,
  NO_REPUTATION_COUNTS,
  rate,
  reputationOf,
} from '../helpers/deals.ts';
import { callJson as call } from '../helpers/http.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { joinWorkspace, newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * Reputation from deals (protocol/documents/deals-protocol.md): agreed deals counted once, distinct
 * counterparties, and only the standing ratings.
 */
const test = serverSuite('deals: reputation');

test('reputation counts agreed deals once each, its distinct counterparties and only the standing ratings; a correction supersedes the old one', async ({
  server,
}) => {
  const maker = await server.signUp();
  const fresh = await reputationOf(server, maker);
  assert.equal(fresh.counts, NO_REPUTATION_COUNTS);
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
    await saveFile(server, maker, workspaceId, path, text);
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
  await saveFile(
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
  await saveFile(
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

test.run();
