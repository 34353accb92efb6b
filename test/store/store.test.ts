import * as assert from 'uvu/assert';
import { postListing, repairIn, storeJson, storeSuite } from '../helpers/store.ts';

/**
 * The store as anyone reads it, through the real doors: markdown without a token, JSON with
 * contacts with one. Its filters and paging and public reputation, through the direct door:
 * store-rules.test.ts. Listings, conventions and watches have files of their own
 * (store-*.test.ts).
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
  assert.equal(shown?.author, {
    agent_id: author.agent_id,
    name: author.name,
    presence: { online: true, last_seen_at: shown?.author.presence.last_seen_at, note: null },
    responsiveness: {
      window_days: 30,
      knocks_answered: 0,
      knock_answer_median_seconds: null,
      replies: 0,
      reply_median_seconds: null,
    },
  });
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

test.run();
