import * as assert from 'uvu/assert';
import { heard } from '../helpers/changes.ts';
import { callTool } from '../helpers/clients.ts';
import { callJson as call, request } from '../helpers/http.ts';
import { mcpClient } from '../helpers/server-suite.ts';
import {
  ids,
  listingOf,
  postListing,
  repairIn,
  storeJson,
  storeSuite,
  type Listing,
} from '../helpers/store.ts';
import type { TestServer } from '../helpers/server.ts';
import type { TestAgent } from '../helpers/workspaces.ts';

/**
 * Moderation (issue 23): the operator's hide_listing, show_listing, suspend_agent,
 * restore_agent and read_operator_log, through HTTP and MCP: no route at all to anyone else,
 * each act told to the agent as `operator.notice`; a hidden listing out of every read of the
 * store until shown. (The operator log, the refusals and abuse reports with links:
 * moderation-rules.test.ts; suspension's effects: moderation-suspension.test.ts.)
 */
const test = storeSuite('the operator moderates listings and agents, and no one else can');

const MISSING = '6f1c0a52-1b9e-4c1a-a0f4-2f6c8e9b1d20';

interface LogEntry {
  entry_id: string;
  at: string;
  action: string;
  agent_id: string;
  listing_id?: string;
  reason: string;
}

const act = (server: TestServer, token: string | null, path: string, body: unknown) =>
  call<{ entry_id: string; hidden?: boolean; suspended?: boolean; code?: string }>(
    server,
    'POST',
    path,
    token,
    body,
  );

async function operatorLog(server: TestServer, operatorToken: string, query = '') {
  const answer = await call<{ entries: LogEntry[]; next_cursor: string | null }>(
    server,
    'GET',
    `/operator/log${query}`,
    operatorToken,
  );
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
}

/** A fresh author with one listing in the store (a place of its own, so reads find it alone). */
async function listed(server: TestServer, place: string) {
  const author = await server.signUp();
  const posted = await postListing(server, author, repairIn(place));
  assert.is(posted.status, 201, JSON.stringify(posted.body));
  return { author, listingId: posted.body.listing_id };
}

/** Where a listing shows up, read by `reader`: each read of the store there is. */
async function seenIn(server: TestServer, reader: TestAgent, author: TestAgent, listingId: string) {
  const json = await storeJson(server, '?limit=500', reader.api_token);
  const markdown = await (await server.get('/store?limit=500')).text();
  const one = await call(server, 'GET', `/listings/${listingId}`, reader.api_token);
  const mine = await call<{ listings: { listing_id: string }[] }>(
    server,
    'GET',
    '/listings/mine',
    author.api_token,
  );
  const profile = await call<{ listings: Listing[] }>(
    server,
    'GET',
    `/agents/${author.agent_id}`,
    null,
  );
  const index = async (sql: string, scope: string) => {
    const answer = await call<{ rows: unknown[][] }>(
      server,
      'POST',
      '/index/sql',
      reader.api_token,
      {
        sql,
        params: [listingId],
        scope,
      },
    );
    assert.is(answer.status, 200, JSON.stringify(answer.body));
    return answer.body.rows.length > 0;
  };
  return {
    storeJson: ids(json.body.listings).includes(listingId),
    storeMarkdown: markdown.includes(listingId),
    getListing: one.status === 200,
    myListings: mine.body.listings.some((l) => l.listing_id === listingId),
    profile: profile.body.listings.some((l) => l.listing_id === listingId),
    indexStore: await index('select listing_id from store where listing_id = $1', 'own'),
    indexAxisValues: await index(
      'select listing_id from axis_values where listing_id = $1',
      'store',
    ),
  };
}

const EVERYWHERE = {
  storeJson: true,
  storeMarkdown: true,
  getListing: true,
  myListings: true,
  profile: true,
  indexStore: true,
  indexAxisValues: true,
};
const NOWHERE = {
  storeJson: false,
  storeMarkdown: false,
  getListing: false,
  myListings: false,
  profile: false,
  indexStore: false,
  indexAxisValues: false,
};

const ROUTES = (listingId: string, agentId: string) => [
  { name: 'hide_listing', method: 'POST', path: `/operator/listings/${listingId}/hide` },
  { name: 'show_listing', method: 'POST', path: `/operator/listings/${listingId}/show` },
  { name: 'suspend_agent', method: 'POST', path: `/operator/agents/${agentId}/suspend` },
  { name: 'restore_agent', method: 'POST', path: `/operator/agents/${agentId}/restore` },
  { name: 'read_operator_log', method: 'GET', path: '/operator/log' },
];

test('to anyone but the operator each moderation operation is no route at all: the bytes of an unknown path, and no MCP tool', async (context) => {
  const { server, operatorToken } = context;
  const { author, listingId } = await listed(server, 'Lyon');
  const stranger = await server.signUp();
  const before = (await operatorLog(server, operatorToken)).entries.length;
  for (const route of ROUTES(listingId, author.agent_id)) {
    const body = route.method === 'POST' ? { reason: 'I would like to.' } : undefined;
    const unknownPath = `${route.path}x`;
    const unknown = await request(server, route.method, unknownPath, { body });
    const unknownText = JSON.stringify(unknown.body).replaceAll(unknownPath, route.path);
    for (const token of [stranger.api_token, author.api_token, null, 'asvc_nonsense']) {
      const answer = await request(server, route.method, route.path, { token, body });
      assert.is(answer.status, 404, `${route.name} as ${token ?? 'nobody'}`);
      assert.is(JSON.stringify(answer.body), unknownText, `${route.name}: as for an unknown path`);
    }
  }
  assert.is((await operatorLog(server, operatorToken)).entries.length, before, 'nothing done');
  assert.ok(ids((await storeJson(server, '?limit=500')).body.listings).includes(listingId));
  assert.is((await heard(server, author, 'operator.notice')).length, 0);

  const names = ROUTES(listingId, author.agent_id).map((r) => r.name);
  const agentTools = await mcpClient(context, stranger.api_token);
  const listed_ = (await agentTools.listTools()).tools.map((t) => t.name);
  for (const name of names) assert.not.ok(listed_.includes(name), `${name} is not listed`);
  const errorOf = (name: string) =>
    callTool(agentTools, name, { listing_id: listingId, reason: 'x' }).then(
      (result) => JSON.stringify(result),
      (error: Error) => error.message,
    );
  assert.is(
    await errorOf('hide_listing'),
    (await errorOf('hide_listingx')).replaceAll('hide_listingx', 'hide_listing'),
    'a call of the hidden tool answers as for a tool that does not exist',
  );
  const operatorTools = await mcpClient(context, operatorToken, 'operator');
  const offered = (await operatorTools.listTools()).tools.map((t) => t.name);
  for (const name of names) assert.ok(offered.includes(name), `${name} is offered to the operator`);
});

test('hide_listing takes a listing out of every read of the store and of watches until show_listing puts it back; the author is told both', async (context) => {
  const { server, operatorToken } = context;
  const { author, listingId } = await listed(server, 'Ghent');
  const reader = await server.signUp();
  const watched = await call(server, 'POST', '/watches', reader.api_token, {
    convention: 'local-services',
    axis: 'place',
    value: 'Ghent',
  });
  assert.is(watched.status, 201);
  assert.equal(await seenIn(server, reader, author, listingId), EVERYWHERE);

  const hidden = await act(server, operatorToken, `/operator/listings/${listingId}/hide`, {
    reason: 'Sells stolen bicycles.',
  });
  assert.is(hidden.status, 200, JSON.stringify(hidden.body));
  assert.is(hidden.body.hidden, true);
  assert.equal(await seenIn(server, reader, author, listingId), NOWHERE);
  const gone = await call(server, 'GET', `/listings/${listingId}`, reader.api_token);
  const never = await call(server, 'GET', `/listings/${MISSING}`, reader.api_token);
  assert.equal(gone.body, never.body, 'a hidden listing answers as one that never was');

  // Its author changes it while hidden: no watch hears of it.
  const changed = await postListing(
    server,
    author,
    repairIn('Ghent', { listing_id: listingId, name: 'Bicycle repair, hidden' }),
  );
  assert.is(changed.status, 200, JSON.stringify(changed.body));

  const shown = await act(server, operatorToken, `/operator/listings/${listingId}/show`, {
    reason: 'The seller proved the bicycles are theirs.',
  });
  assert.is(shown.status, 200, JSON.stringify(shown.body));
  assert.is(shown.body.hidden, false);
  assert.equal(await seenIn(server, reader, author, listingId), EVERYWHERE);
  const again = await postListing(
    server,
    author,
    repairIn('Ghent', { listing_id: listingId, name: 'Bicycle repair, shown' }),
  );
  assert.is(again.status, 200);
  const posted = await heard(server, reader, 'listing.posted');
  assert.equal(
    posted.map((change) => listingOf(change).agent_written?.name),
    ['Bicycle repair, shown'],
    'the watch heard only of the change made while the listing was in the store',
  );

  const notices = await heard(server, author, 'operator.notice');
  assert.equal(
    notices.map((n) => n.data),
    [
      {
        action: 'hide_listing',
        reason: 'Sells stolen bicycles.',
        listing_id: listingId,
        from_operator: true,
      },
      {
        action: 'show_listing',
        reason: 'The seller proved the bicycles are theirs.',
        listing_id: listingId,
        from_operator: true,
      },
    ],
  );
  assert.is(notices[0]?.actor?.agent_id, server.services.operatorId);
});

test('hide_listing and show_listing work over MCP for the operator', async (context) => {
  const { server, operatorToken } = context;
  const { listingId } = await listed(server, 'Namur');
  const client = await mcpClient(context, operatorToken, 'operator');
  const hidden = await callTool(client, 'hide_listing', {
    listing_id: listingId,
    reason: 'Spam.',
  });
  assert.not.ok(hidden.isError, JSON.stringify(hidden));
  assert.not.ok(ids((await storeJson(server, '?limit=500')).body.listings).includes(listingId));
  const shown = await callTool(client, 'show_listing', { listing_id: listingId, reason: 'Ok.' });
  assert.not.ok(shown.isError, JSON.stringify(shown));
  assert.ok(ids((await storeJson(server, '?limit=500')).body.listings).includes(listingId));
  const log = await callTool(client, 'read_operator_log', { limit: 2 });
  const entries = (log.structuredContent as { entries: LogEntry[] }).entries;
  assert.equal(
    entries.map((e) => [e.action, e.reason]),
    [
      ['show_listing', 'Ok.'],
      ['hide_listing', 'Spam.'],
    ],
  );
});

test.run();
