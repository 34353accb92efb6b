import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
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
} from '../helpers/deals.ts';
import { sha256 } from '../helpers/digests.ts';
import { room } from '../helpers/rooms.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import { problemOf, type Agent } from '../helpers/wire-types.ts';
import { saveFile } from '../helpers/workspaces.ts';

/**
 * What deals refuse (protocol/documents/deals-protocol.md): agreeing as a non-party or to the wrong
 * version, deal headers that are not valid, deliveries and ratings out of turn, and deals a
 * stranger may not see; each with its code, and nothing recorded.
 */
const test = serverSuite('deals: refusals');

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
  await saveFile(server, seller, workspaceId, 'deal.md', newer);
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
    sha256: sha256('something else'),
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
    await saveFile(server, buyer, workspaceId, path, body);
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
  await saveFile(server, buyer, workspaceId, 'deal.md', text);
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
  await saveFile(server, buyer, workspaceId, 'solo.md', dealText('alone', [lineOf(buyer, 0)]));
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
  await saveFile(server, seller, workspaceId, 'there.txt', 'here');
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

test.run();
