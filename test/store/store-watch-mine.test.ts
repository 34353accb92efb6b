import * as assert from 'uvu/assert';
import { heard } from '../helpers/changes.ts';
import { callTool, toolProblem } from '../helpers/clients.ts';
import { callJson as call } from '../helpers/http.ts';
import { mcpClient } from '../helpers/server-suite.ts';
import { listingOf, needIn, postedListing, repairIn, storeSuite } from '../helpers/store.ts';
import { problemOf, type Agent } from '../helpers/wire-types.ts';
import type { TestServer } from '../helpers/server.ts';

/**
 * The reverse watch: `watch_listings {match_my_listings: true}` tells a Can author of every new
 * Need that fits one of its listings (post_listing's `matches` rule), following its listings as
 * they are when each Need comes.
 */
const test = storeSuite('store: a watch that follows my own listings');

interface Watch {
  watch_id: string;
  match_my_listings: boolean;
  convention: string | null;
}

/** The listings the agent has heard of since it last read, with the watch that heard each. */
async function heardListings(server: TestServer, agent: Agent) {
  return (await heard(server, agent, 'listing.posted')).map((change) => [
    listingOf(change).listing_id,
    change.data.watch_id,
  ]);
}

test('a Can author who watches its listings hears of a fitting Need over /changes, and not of others', async ({
  server,
}) => {
  const seller = await server.signUp();
  const buyer = await server.signUp();
  await postedListing(server, seller, repairIn('Berlin'));
  const watched = await call<Watch>(server, 'POST', '/watches', seller.api_token, {
    match_my_listings: true,
  });
  assert.is(watched.status, 201, JSON.stringify(watched.body));
  assert.is(watched.body.match_my_listings, true);
  assert.is(watched.body.convention, null);
  const { watch_id } = watched.body;
  await heard(server, seller, 'listing.posted');

  await postedListing(server, buyer, needIn('Hamburg')); // another place
  await postedListing(server, buyer, repairIn('Berlin')); // the same kind as mine
  const noConvention = { ...needIn('Berlin'), convention: undefined, dimensions: {} };
  await postedListing(server, buyer, noConvention);
  const fitting = (await postedListing(server, buyer, needIn('Berlin'))).listing_id;
  assert.equal(await heardListings(server, seller), [[fitting, watch_id]]);
  assert.equal(await heardListings(server, buyer), [], 'nobody else hears of it');

  const listed = await call<{ watches: Watch[] }>(server, 'GET', '/watches', seller.api_token);
  assert.equal(
    listed.body.watches.map((w) => [w.watch_id, w.match_my_listings]),
    [[watch_id, true]],
  );
});

test('the watch follows my listings as they are: a Can posted later counts, a deleted one stops counting', async ({
  server,
}) => {
  const seller = await server.signUp();
  const buyer = await server.signUp();
  const berlin = (await postedListing(server, seller, repairIn('Berlin'))).listing_id;
  const watched = await call<Watch>(server, 'POST', '/watches', seller.api_token, {
    match_my_listings: true,
  });
  assert.is(watched.status, 201, JSON.stringify(watched.body));
  const { watch_id } = watched.body;

  await postedListing(server, seller, repairIn('Munich'));
  const munich = (await postedListing(server, buyer, needIn('Munich'))).listing_id;
  assert.equal(await heardListings(server, seller), [[munich, watch_id]]);

  const deleted = await call(server, 'DELETE', `/listings/${berlin}`, seller.api_token);
  assert.is(deleted.status, 200, JSON.stringify(deleted.body));
  await postedListing(server, buyer, needIn('Berlin'));
  assert.equal(await heardListings(server, seller), []);

  const stopped = await call(server, 'DELETE', `/watches/${watch_id}`, seller.api_token);
  assert.is(stopped.status, 200, JSON.stringify(stopped.body));
  await postedListing(server, buyer, needIn('Munich'));
  assert.equal(await heardListings(server, seller), []);
});

test('match_my_listings over MCP, and refused with any other criterion or as false alone, nothing saved', async (context) => {
  const { server } = context;
  const seller = await server.signUp();
  const client = await mcpClient(context, seller.api_token);
  const made = await callTool(client, 'watch_listings', { match_my_listings: true });
  assert.not.ok(made.isError, JSON.stringify(made));
  assert.is((made.structuredContent as unknown as Watch).match_my_listings, true);

  const refusals: [Record<string, unknown>, string][] = [
    [{ match_my_listings: true, kind: 'need' }, 'kind'],
    [{ match_my_listings: true, convention: 'local-services' }, 'convention'],
    [{ match_my_listings: true, axis: 'place', value: 'Berlin' }, 'axis'],
    [{ match_my_listings: true, q: 'bicycle' }, 'q'],
    [{ match_my_listings: false }, 'convention'],
    [{ match_my_listings: 'yes' }, 'match_my_listings'],
  ];
  for (const [body, field] of refusals) {
    const refused = await call(server, 'POST', '/watches', seller.api_token, body);
    assert.is(refused.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(refused.body)}`);
    assert.is(problemOf(refused).code, 'invalid_input');
    assert.is(problemOf(refused).field, field, JSON.stringify(body));
  }
  const overMcp = await callTool(client, 'watch_listings', { match_my_listings: true, q: 'x' });
  assert.ok(overMcp.isError);
  assert.is(toolProblem(overMcp).code, 'invalid_input');

  const listed = await call<{ watches: Watch[] }>(server, 'GET', '/watches', seller.api_token);
  assert.equal(
    listed.body.watches.map((w) => w.watch_id),
    [(made.structuredContent as unknown as Watch).watch_id],
    'only the one watch was saved',
  );
});

test.run();
