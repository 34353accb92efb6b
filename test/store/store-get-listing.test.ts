import * as assert from 'uvu/assert';
import { callTool, toolProblem } from '../helpers/clients.ts';
import { callJson as call } from '../helpers/http.ts';
import { mcpClient } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import {
  needIn,
  postListing,
  repairIn,
  storeJson,
  storeSuite,
  type Listing,
} from '../helpers/store.ts';
import { problemOf } from '../helpers/wire-types.ts';

/**
 * get_listing (GET /listings/<listing_id>) and list_my_listings (GET /listings/mine): one
 * listing as the store shows it, and one's own listings, at the HTTP and MCP doors. Their
 * refusals of a caller or a query: store-get-listing-rules.test.ts.
 */
const test = storeSuite('store: one listing, and my listings');

interface MyListing {
  listing_id: string;
  kind: 'need' | 'can';
  name: string;
  convention: string | null;
  placed: boolean;
  workspace_id: string;
  path: string;
  version: number;
  saved_at: string;
}
interface MyListings {
  listings: MyListing[];
  next_cursor: string | null;
}

/** The store's own JSON element for `listingId`, as `token` (or anyone) reads the store. */
async function inStore(server: TestServer, listingId: string, token?: string): Promise<Listing> {
  const store = await storeJson(server, '?limit=500', token);
  assert.is(store.status, 200, JSON.stringify(store.body));
  const found = store.body.listings.find((listing) => listing.listing_id === listingId);
  assert.ok(found, 'the listing is in the store');
  return found;
}

test('a listing reads as the store shows it: contact for signed-up callers only, over HTTP and MCP', async (context) => {
  const { server } = context;
  const author = await server.signUp();
  const reader = await server.signUp();
  const posted = await postListing(server, author, repairIn('Berlin'));
  assert.is(posted.status, 201, JSON.stringify(posted.body));
  const { listing_id } = posted.body;

  const signedIn = await call<Listing>(server, 'GET', `/listings/${listing_id}`, reader.api_token);
  assert.is(signedIn.status, 200, JSON.stringify(signedIn.body));
  assert.equal(signedIn.body, await inStore(server, listing_id, reader.api_token));
  assert.is(signedIn.body.agent_written.contact, 'bikes@example.org');

  const anonymous = await call<Listing>(server, 'GET', `/listings/${listing_id}`, null);
  assert.is(anonymous.status, 200, JSON.stringify(anonymous.body));
  assert.equal(anonymous.body, await inStore(server, listing_id));
  assert.not.ok('contact' in anonymous.body.agent_written, 'no contact for anonymous callers');

  const client = await mcpClient(context, reader.api_token);
  const overMcp = await callTool(client, 'get_listing', { listing_id });
  assert.not.ok(overMcp.isError, JSON.stringify(overMcp));
  assert.equal(overMcp.structuredContent, signedIn.body);
});

test('a deleted listing and one never posted answer the same 404 not_found; a listing_id that is no uuid, 400', async (context) => {
  const { server } = context;
  const author = await server.signUp();
  const posted = await postListing(server, author, repairIn('Hamburg'));
  assert.is(posted.status, 201, JSON.stringify(posted.body));
  const { listing_id } = posted.body;
  const deleted = await call(server, 'DELETE', `/listings/${listing_id}`, author.api_token);
  assert.is(deleted.status, 200, JSON.stringify(deleted.body));

  const gone = await call(server, 'GET', `/listings/${listing_id}`, author.api_token);
  assert.is(gone.status, 404, JSON.stringify(gone.body));
  assert.is(problemOf(gone).code, 'not_found');
  const never = await call(
    server,
    'GET',
    '/listings/00000000-0000-4000-8000-000000000000',
    author.api_token,
  );
  assert.equal(never.body, gone.body);
  const malformed = await call(server, 'GET', '/listings/not-a-listing', null);
  assert.is(malformed.status, 400, JSON.stringify(malformed.body));
  assert.is(problemOf(malformed).code, 'invalid_input');

  const client = await mcpClient(context, author.api_token);
  const overMcp = await callTool(client, 'get_listing', { listing_id });
  assert.ok(overMcp.isError);
  assert.is(toolProblem(overMcp).code, 'not_found');
});

test('my listings are mine only, needs and cans, newest first, a page at a time, without the deleted ones', async (context) => {
  const { server } = context;
  const me = await server.signUp();
  const other = await server.signUp();
  const first = await postListing(server, me, repairIn('Munich'));
  const second = await postListing(server, me, needIn('Munich'));
  const third = await postListing(server, me, repairIn('Bonn'));
  const dropped = await postListing(server, me, repairIn('Kiel'));
  const theirs = await postListing(server, other, repairIn('Munich'));
  for (const posted of [first, second, third, dropped, theirs]) {
    assert.is(posted.status, 201, JSON.stringify(posted.body));
  }
  assert.is(
    (await call(server, 'DELETE', `/listings/${dropped.body.listing_id}`, me.api_token)).status,
    200,
  );

  const page = await call<MyListings>(server, 'GET', '/listings/mine?limit=2', me.api_token);
  assert.is(page.status, 200, JSON.stringify(page.body));
  const shown = await inStore(server, third.body.listing_id);
  assert.equal(page.body.listings[0], {
    listing_id: third.body.listing_id,
    kind: 'can',
    name: 'Bicycle repair in Bonn',
    convention: 'local-services',
    placed: shown.placed,
    workspace_id: third.body.workspace_id,
    path: third.body.path,
    version: 1,
    saved_at: (shown as Listing & { saved_at: string }).saved_at,
  });
  assert.equal(
    page.body.listings.map((listing) => [listing.listing_id, listing.kind]),
    [
      [third.body.listing_id, 'can'],
      [second.body.listing_id, 'need'],
    ],
  );
  assert.ok(page.body.next_cursor);
  const next = await call<MyListings>(
    server,
    'GET',
    `/listings/mine?limit=2&cursor=${page.body.next_cursor}`,
    me.api_token,
  );
  assert.equal(
    next.body.listings.map((listing) => listing.listing_id),
    [first.body.listing_id],
  );
  assert.is(next.body.next_cursor, null);

  const needs = await call<MyListings>(server, 'GET', '/listings/mine?kind=need', me.api_token);
  assert.equal(
    needs.body.listings.map((listing) => listing.listing_id),
    [second.body.listing_id],
  );

  const client = await mcpClient(context, other.api_token);
  const overMcp = await callTool(client, 'list_my_listings', {});
  assert.not.ok(overMcp.isError, JSON.stringify(overMcp));
  assert.equal(
    (overMcp.structuredContent as unknown as MyListings).listings.map((l) => l.listing_id),
    [theirs.body.listing_id],
  );
});

test.run();
