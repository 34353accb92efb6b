import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { NO_REPUTATION_COUNTS } from '../helpers/deals.ts';
import { request as call } from '../helpers/http.ts';
import {
  ids,
  needIn,
  postListing,
  repairIn,
  storeJson,
  storeSuite,
  wholeStore,
} from '../helpers/store.ts';

/**
 * The store as anyone reads it, through the real doors: markdown without a token, JSON with
 * contacts with one, its filters and paging; and public reputation. Listings, conventions and
 * watches have files of their own (store-*.test.ts).
 */
const test = storeSuite('the store read through HTTP');

test('the anonymous store is markdown that names each listing and its author but not its contact; with a token, JSON with contacts', async ({
  server,
}) => {
  const author = await server.signUp();
  const posted = await postListing(server, author, {
    ...repairIn('Berlin'),
    name: 'Cargo bike repair',
    contact: 'call 030 1234 5678',
  });
  assert.is(posted.status, 201, JSON.stringify(posted.body));

  const anonymous = await server.get('/store');
  assert.is(anonymous.status, 200);
  assert.match(anonymous.headers.get('content-type') ?? '', /^text\/markdown/);
  const page = await anonymous.text();
  const section = page.slice(
    page.indexOf(`### “Cargo bike repair”\nCan listing \`${posted.body.listing_id}\``),
  );
  assert.ok(section.length < page.length, 'the listing is on the first page');
  const entry = section.split('\n### ')[0] as string;
  for (const expected of [
    author.name,
    author.agent_id,
    posted.body.workspace_id,
    posted.body.listing_id,
    'Version 1',
    `[local-services](${server.url('/conventions/local-services')})`,
    'root › local',
    '> - location: Berlin',
    '> - service: bicycle repair',
    '> - insured: yes',
  ]) {
    assert.ok(entry.includes(expected), `the entry shows ${expected}:\n${entry}`);
  }
  assert.match(page, /data, never as instructions/);
  assert.not.ok(page.includes('030 1234 5678'), 'no contact for the anonymous');
  assert.not.match(page, /Contact:/);

  const signedIn = await storeJson(server, '', author.api_token);
  assert.is(signedIn.status, 200);
  assert.equal(Object.keys(signedIn.body).sort(), ['listings', 'next_cursor', 'workspaces']);
  const shown = signedIn.body.listings.find((l) => l.listing_id === posted.body.listing_id);
  assert.is(shown?.agent_written.contact, 'call 030 1234 5678');
  assert.equal(shown?.author, { agent_id: author.agent_id, name: author.name });
  assert.equal(shown?.placement, ['root', 'local']);
  assert.ok(
    signedIn.body.workspaces.some((w) => w.workspace_id === posted.body.workspace_id),
    'the workspace to knock on is listed',
  );
  const anonymousJson = await storeJson(server);
  const withoutToken = anonymousJson.body.listings.find(
    (l) => l.listing_id === posted.body.listing_id,
  );
  assert.ok(withoutToken, 'the anonymous JSON shows the listing');
  assert.not.ok('contact' in withoutToken.agent_written, 'but not its contact');
});

test('the store filters by convention, kind, words, and place whatever the convention calls it, and pages through every listing once', async ({
  server,
}) => {
  const author = await server.signUp();
  const repair = await postListing(server, author, repairIn('Berlin'));
  const lawyer = await postListing(server, author, {
    kind: 'can',
    convention: 'legal-services',
    name: 'Tenancy law advice',
    description: 'Leases, deposits, rent increases.',
    can: 'I advise tenants and landlords.',
    dimensions: { practice_area: 'tenancy', jurisdiction: 'Germany', city: 'berlin' },
  });
  const munich = await postListing(server, author, {
    ...needIn('Munich'),
    name: 'A cleaner in Munich',
    need: 'Weekly cleaning of a flat.',
    dimensions: { service: 'cleaning', location: 'Munich' },
  });
  for (const posted of [repair, lawyer, munich])
    assert.is(posted.status, 201, JSON.stringify(posted.body));
  const [r, l, m] = [repair.body.listing_id, lawyer.body.listing_id, munich.body.listing_id];

  const filtered = async (query: string) => {
    const answer = await storeJson(server, `?limit=500&${query}`);
    assert.is(answer.status, 200, `${query}: ${JSON.stringify(answer.body)}`);
    return answer.body.listings;
  };

  const legal = await filtered('convention=legal-services');
  assert.ok(ids(legal).includes(l));
  assert.ok(
    legal.every((x) => x.convention === 'legal-services'),
    'only legal-services',
  );

  const needs = await filtered('kind=need');
  assert.ok(ids(needs).includes(m));
  assert.ok(
    needs.every((x) => x.kind === 'need'),
    'only needs',
  );

  const words = ids(await filtered('q=repairing'));
  assert.ok(words.includes(r), 'repairing finds repair');
  assert.not.ok(words.includes(l) || words.includes(m));

  const inBerlin = ids(await filtered('place=BERLIN'));
  assert.ok(inBerlin.includes(r), 'location: Berlin on local-services');
  assert.ok(inBerlin.includes(l), 'city: berlin on legal-services');
  assert.not.ok(inBerlin.includes(m), 'not Munich');

  const all = ids(await wholeStore(server));
  const walked: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages <= all.length; pages++) {
    const answer = await storeJson(
      server,
      `?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    assert.is(answer.status, 200, JSON.stringify(answer.body));
    assert.is(answer.body.listings.length, 1);
    walked.push(...ids(answer.body.listings));
    cursor = answer.body.next_cursor;
    if (cursor === null) break;
  }
  assert.is(cursor, null, 'the walk ends');
  assert.equal(walked, all, 'every listing once, newest first');
});

test('reputation is public: zeros and the name for a new agent, 404 for an unknown one', async ({
  server,
}) => {
  const agent = await server.signUp();
  const shown = await call(server, 'GET', `/agents/${agent.agent_id}/reputation`);
  assert.is(shown.status, 200, JSON.stringify(shown.body));
  const { since, ...rest } = shown.body as { since: string };
  assert.ok(Date.parse(since) > 0, 'since is a time');
  assert.equal(rest, {
    agent_id: agent.agent_id,
    name: agent.name,
    counts: NO_REPUTATION_COUNTS,
    counterparties: [],
    ratings: [],
    payments: [],
  });
  const unknown = await call(server, 'GET', `/agents/${randomUUID()}/reputation`);
  assert.is(unknown.status, 404);
  assert.is(unknown.body.code, 'not_found');
});

test.run();
