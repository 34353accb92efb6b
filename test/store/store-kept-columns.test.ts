import * as assert from 'uvu/assert';
import { migrate } from '../../storage/migrate.ts';
import {
  fileUrl,
  postListing,
  readText,
  repairIn,
  storeJson,
  storeSuite,
} from '../helpers/store.ts';
import { request as call } from '../helpers/http.ts';

/**
 * The store filters and orders listings by what each listing keeps of its current version
 * (migration 030: its time, convention, words and header terms), written in the statement that
 * records the listing. Held to the answers: a listing rewritten through any door is found by
 * what it says now, and the migration fills the columns exactly as the service writes them.
 */
const test = storeSuite('the store reads what each listing keeps of its current version');

const namesOf = async (server: Parameters<typeof storeJson>[0], query: string) => {
  const answer = await storeJson(server, query);
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.listings.map((listing) => listing.agent_written.name);
};

test('a listing rewritten through its file is found by its new place, words and time, and no longer by its old ones', async ({
  server,
}) => {
  const author = await server.signUp();
  const tag = `kept${process.pid}x${Date.now()}`;
  const moved = await postListing(
    server,
    author,
    repairIn('Kassel', { name: `Wheels ${tag} in Kassel` }),
  );
  assert.is(moved.status, 201, JSON.stringify(moved.body));
  const other = await postListing(server, author, repairIn('Kassel', { name: `Gears ${tag}` }));
  assert.is(other.status, 201, JSON.stringify(other.body));
  assert.equal(await namesOf(server, `?q=${tag}`), [`Gears ${tag}`, `Wheels ${tag} in Kassel`]);

  // Rewritten with write_file, not post_listing: another place, other words, a later time.
  const text = await readText(server, author, moved.body.workspace_id, moved.body.path);
  const rewritten = text
    .replaceAll('Kassel', 'Erfurt')
    .replace(`Wheels ${tag}`, `Spokes ${tag} trued`);
  const saved = await call(server, 'PUT', fileUrl(moved.body.workspace_id, moved.body.path), {
    token: author.api_token,
    text: rewritten,
  });
  assert.ok(saved.status === 200 || saved.status === 201, JSON.stringify(saved.body));

  assert.equal(
    await namesOf(server, `?q=${tag}`),
    [`Spokes ${tag} trued in Erfurt`, `Gears ${tag}`],
    'the rewritten listing is the newest',
  );
  assert.equal(await namesOf(server, `?q=${tag} trued`), [`Spokes ${tag} trued in Erfurt`]);
  assert.equal(await namesOf(server, `?q=${tag} wheels`), []);
  const inErfurt = await namesOf(server, '?convention=local-services&kind=can&place=erfurt');
  assert.ok(inErfurt.includes(`Spokes ${tag} trued in Erfurt`), inErfurt.join(', '));
  const inKassel = await namesOf(server, '?convention=local-services&kind=can&place=Kassel');
  assert.equal(
    inKassel.filter((name) => name.includes(tag)),
    [`Gears ${tag}`],
  );
});

type Kept = {
  listing_id: string;
  saved_at: Date;
  convention: string | null;
  search: string;
  field_terms: string[];
};

test('migration 030 fills the kept columns of listings written before it exactly as the service writes them', async ({
  server,
}) => {
  const author = await server.signUp();
  for (const body of [
    repairIn('Berlin'),
    repairIn('Köln', {
      name: 'Fahrräder "Ü" in Köln',
      dimensions: { service: 'bicycle repair', location: 'KÖLN', insured: 'no' },
    }),
    {
      kind: 'need',
      name: 'Anyone who reads Latin',
      description: 'A few pages, once.',
      need: 'A translation.',
    },
  ]) {
    const posted = await postListing(server, author, body);
    assert.is(posted.status, 201, JSON.stringify(posted.body));
  }
  const driver = server.services.driver;
  const kept = () =>
    driver.query<Kept>(
      `select listing_id, saved_at, convention, search::text as search, field_terms
       from listings order by listing_id`,
    );
  const written = await kept();
  assert.ok(written.length >= 3);
  assert.ok(
    written.some((row) => row.field_terms.includes('"location""köln"')),
    'a term is the field and its value in lower case, each JSON-quoted',
  );

  // The database as it was before 030, with the same listings; then 030 again.
  await driver.script(`
    drop index listings_store_recent;
    drop index listings_store_convention;
    drop index listings_store_search;
    drop index listings_store_field_terms;
    alter table listings drop column saved_at, drop column convention, drop column search,
      drop column field_terms;
    drop function store_field_terms(jsonb);
    drop function store_field_term(text, text);
    delete from schema_migrations where version = 30;`);
  assert.equal(await migrate(driver), [30]);
  assert.equal(await kept(), written);

  const store = await storeJson(server, '?convention=local-services&place=köln');
  assert.equal(
    store.body.listings.map((listing) => listing.agent_written.name),
    ['Fahrräder "Ü" in Köln'],
  );
});

test.run();
