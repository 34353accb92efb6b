import * as assert from 'uvu/assert';
import { callJson as call } from '../helpers/http.ts';
import {
  agree,
  agreeAll,
  dealOf,
  dealRoom,
  dealText,
  getDeal,
  lineOf,
  listed,
} from '../helpers/deals.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import { problemOf, type Agent } from '../helpers/wire-types.ts';
import { saveFile } from '../helpers/workspaces.ts';

/**
 * Deals over a deal file that was deleted (issue 32 §2): a delete lets go of what the index kept
 * of every version's header (rule `every_kept_byte`), so no one can agree to a deleted file's
 * version (404 while the path is gone, 409 deal_version_mismatch once it is saved again), and a
 * deal agreed before the delete stays readable, its record and receipts whole, with no title and
 * no header parties. Through HTTP, on the driver DATABASE_URL names (PGlite without it).
 */
const test = serverSuite('deals over a deleted deal file');

const deleteFile = (server: Parameters<typeof call>[0], agent: Agent, id: string, path: string) =>
  call(server, 'DELETE', `/workspaces/${id}/files/${path}`, agent.api_token);

test('agreeing to a version of a deleted deal file answers 404 not_found, as the file, and records no deal', async ({
  server,
}) => {
  const { workspaceId, agents, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  assert.is((await agree(server, buyer, workspaceId, 'deal.md', at)).status, 200);
  assert.is((await deleteFile(server, seller, workspaceId, 'deal.md')).status, 200);
  const refused = await agree(server, seller, workspaceId, 'deal.md', at);
  assert.is(refused.status, 404, JSON.stringify(refused.body));
  assert.is(problemOf(refused).code, 'not_found');
  const missing = await agree(server, seller, workspaceId, 'never.md', at);
  assert.equal(refused.body, missing.body, 'the same answer as a file that never was');
});

test('once the path is saved again, agreeing to a version from before the delete answers 409 deal_version_mismatch naming the current one', async ({
  server,
}) => {
  const { workspaceId, agents, parties, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  assert.is((await deleteFile(server, seller, workspaceId, 'deal.md')).status, 200);
  await saveFile(server, seller, workspaceId, 'deal.md', dealText('Again', parties.map(lineOf)));
  const now = await listed(server, seller, workspaceId, 'deal.md');
  const refused = await agree(server, buyer, workspaceId, 'deal.md', at);
  assert.is(refused.status, 409, JSON.stringify(refused.body));
  assert.equal(
    [problemOf(refused).code, problemOf(refused).current_version],
    ['deal_version_mismatch', now.version],
  );
  // The new version is a deal of its own, as any file is.
  const dealId = await agreeAll(server, [buyer, seller], workspaceId, now);
  const deal = await dealOf(server, buyer, workspaceId, 'deal.md');
  assert.equal([deal.deal_id, deal.status, deal.title], [dealId, 'agreed', 'Again']);
});

test('a deal agreed before its file was deleted stays readable by its parties: status, agreements and receipts whole, no title and no header parties', async ({
  server,
}) => {
  const { workspaceId, agents, at } = await dealRoom(server);
  const [buyer, seller] = agents as [Agent, Agent];
  const dealId = await agreeAll(server, [buyer, seller], workspaceId, at);
  const before = await dealOf(server, buyer, workspaceId, 'deal.md');
  assert.is(before.title, 'Logo for the translation bot');
  assert.is((await deleteFile(server, seller, workspaceId, 'deal.md')).status, 200);
  for (const party of [buyer, seller]) {
    const byId = await call<typeof before>(
      server,
      'GET',
      `/deals?deal_id=${dealId}`,
      party.api_token,
    );
    assert.is(byId.status, 200, JSON.stringify(byId.body));
    const after = (await getDeal(server, party, workspaceId, 'deal.md')).body;
    assert.equal(after, byId.body);
    assert.equal(
      [after.deal_id, after.status, after.title, after.parties],
      [dealId, 'agreed', null, []],
    );
    assert.equal(after.agreed, before.agreed, 'what was agreed: version, sha256, parties');
    assert.equal(after.agreements, before.agreements, 'the signed receipts');
    const mine = await call<{ deals: { deal_id: string; title: string | null }[] }>(
      server,
      'GET',
      '/deals/mine',
      party.api_token,
    );
    assert.equal(
      mine.body.deals.filter((d) => d.deal_id === dealId).map((d) => d.title),
      [null],
    );
  }
});

test.run();
