import * as assert from 'uvu/assert';
import { request as call } from '../helpers/http.ts';
import { postListing, repairIn, storeJson, storeSuite } from '../helpers/store.ts';

/**
 * What the store keeps to stay fast at 100,000 listings, held to its answers: each workspace's
 * listing count (kept as listings come and go, migration 027) and the joins of `store` with
 * `axis_values` that /index/protocol gives agents to copy.
 */
const test = storeSuite('the store kept fast through HTTP');

type Workspaces = { workspaces: { workspace_id: string; listings: number }[] };

test("a workspace's listing count follows its listings posted, replaced and deleted", async ({
  server,
}) => {
  const author = await server.signUp();
  const first = await postListing(server, author, repairIn('Berlin'));
  assert.is(first.status, 201, JSON.stringify(first.body));
  const second = await postListing(server, author, repairIn('Leipzig'));
  assert.is(second.status, 201, JSON.stringify(second.body));
  const countOf = async () => {
    const store = await storeJson(server, '', author.api_token);
    const body = store.body as unknown as Workspaces;
    return body.workspaces.find((w) => w.workspace_id === first.body.workspace_id)?.listings;
  };
  assert.is(await countOf(), 2);

  const replaced = await postListing(server, author, {
    ...repairIn('Dresden'),
    listing_id: first.body.listing_id,
  });
  assert.is(replaced.status, 200, JSON.stringify(replaced.body));
  assert.is(await countOf(), 2, 'a replaced listing is still one');
  const shown = (await storeJson(server, '', author.api_token)).body.listings.filter(
    (listing) => listing.listing_id === first.body.listing_id,
  );
  assert.equal(
    shown.map((listing) => listing.version),
    [2],
    'the store shows its current version only',
  );

  const deleted = await call(server, 'DELETE', `/listings/${second.body.listing_id}`, {
    token: author.api_token,
  });
  assert.is(deleted.status, 200, JSON.stringify(deleted.body));
  assert.is(await countOf(), 1);
});

/** The SQL statements of the document's block of store/axis_values joins. */
function documentedJoins(document: string): string[] {
  const start = document.indexOf('Joining `store` with `axis_values`');
  assert.ok(start >= 0, 'the document explains the joins');
  const block = /```sql\n([\s\S]*?)```/.exec(document.slice(start))?.[1] ?? '';
  const statements: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('--') || line.trim() === '') continue;
    if (line.startsWith('select')) statements.push(line);
    else statements[statements.length - 1] += `\n${line}`;
  }
  return statements;
}

test('the store and axis_values joins /index/protocol gives find listings by place and price, whatever their fields are called', async ({
  server,
}) => {
  const author = await server.signUp();
  const berlin = await postListing(server, author, repairIn('Berlin', { name: 'Cargo bikes' }));
  assert.is(berlin.status, 201, JSON.stringify(berlin.body));
  const priced = await postListing(
    server,
    author,
    repairIn('Berlin', {
      name: 'Brakes',
      dimensions: { service: 'bicycle repair', location: 'Berlin', rate: '30 EUR per hour' },
    }),
  );
  assert.is(priced.status, 201, JSON.stringify(priced.body));
  const elsewhere = await postListing(server, author, repairIn('Leipzig'));
  assert.is(elsewhere.status, 201, JSON.stringify(elsewhere.body));

  const document = await (await server.get('/index/protocol')).text();
  const joins = documentedJoins(document);
  assert.is(joins.length, 2, joins.join('\n\n'));
  const run = async (sql: string) => {
    const answer = await server.post('/index/sql', { sql, scope: 'store' }, author.api_token);
    const body = (await answer.json()) as { rows: unknown[][] };
    assert.is(answer.status, 200, `${sql}\n${JSON.stringify(body)}`);
    return body.rows;
  };
  // Only this test's listings (another test's may be in the store too).
  const ours = (rows: unknown[][]) =>
    rows.filter((row) =>
      ['Brakes', 'Cargo bikes', 'Bicycle repair in Leipzig'].includes(row[0] as string),
    );
  const places = ours(await run(joins[0] as string));
  const prices = ours(await run(joins[1] as string));
  assert.equal(
    places.map((row) => row.slice(0, 4)),
    [
      ['Brakes', 'can', 'location', 'Berlin'],
      ['Cargo bikes', 'can', 'location', 'Berlin'],
    ],
  );
  assert.equal(prices, [['Brakes', 'rate', '30 EUR per hour']]);
});

test.run();
