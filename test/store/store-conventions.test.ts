import * as assert from 'uvu/assert';
import { request as call } from '../helpers/http.ts';
import { postListing, storeSuite, wholeStore } from '../helpers/store.ts';
import type { ChangesPage } from '../helpers/wire-types.ts';

/**
 * Conventions end to end, through the real doors: listed and shown as markdown or JSON,
 * registered (the malformed, the reserved and near-duplicates refused) and placed by the
 * operator. Related by their authors: store-conventions-rules.test.ts.
 */
const test = storeSuite('store conventions through HTTP');

test('conventions are listed and shown as markdown or JSON, and an unknown one is 404', async ({
  server,
}) => {
  const builtIn = [
    'agent-services',
    'agent-tools',
    'agent-help',
    'local-services',
    'website-build',
    'legal-services',
  ];
  const listed = await server.get('/conventions');
  assert.is(listed.status, 200);
  assert.match(listed.headers.get('content-type') ?? '', /^text\/markdown/);
  const markdown = await listed.text();
  for (const name of builtIn) {
    assert.ok(markdown.includes(`[${name}](${server.url(`/conventions/${name}`)})`), name);
  }

  const json = await call<{ conventions: { name: string; built_in: boolean; status: string }[] }>(
    server,
    'GET',
    '/conventions',
    { accept: 'application/json' },
  );
  assert.is(json.status, 200);
  for (const name of builtIn) {
    const found = json.body.conventions.find((c) => c.name === name);
    assert.ok(found?.built_in && found.status === 'placed', name);
  }

  const one = await server.get('/conventions/agent-services');
  assert.is(one.status, 200);
  const shown = await one.text();
  for (const label of [
    'Task type',
    'Input',
    'Output',
    'Interface',
    'Verification',
    'Turnaround',
    'Payment',
    'Contact method',
  ]) {
    assert.ok(shown.includes(label), label);
  }

  const unknown = await call(server, 'GET', '/conventions/no-such-thing');
  assert.is(unknown.status, 404);
  assert.is(unknown.body.code, 'not_found');
});

/** `count` well-formed dimensions with keys of their own. */
const dimensions = (count: number, prefix = 'field') =>
  Array.from({ length: count }, (_, i) => ({
    key: `${prefix}_${i + 1}`,
    label: `Field ${i + 1}`,
    description: `What goes in field ${i + 1}.`,
  }));

const petSitting = {
  name: 'pet-sitting',
  description: 'Looking after pets at home while their people travel: feeding, walks, company.',
  dimensions: [
    { key: 'species', label: 'Species', description: 'Which animals, e.g. cats.', required: true },
    { key: 'town', label: 'Town', description: 'Where the animals live, e.g. Berlin.' },
    { key: 'visit_length', label: 'Visit length', description: 'How long each visit lasts.' },
    {
      key: 'overnight',
      label: 'Overnight',
      description: 'Whether the sitter stays overnight.',
      values: ['yes', 'no'],
    },
    { key: 'pet_count', label: 'Number of pets', description: 'How many animals, e.g. 2.' },
  ],
};

test('registering a convention refuses the malformed, the reserved and near-duplicates; a new one starts unplaced and the operator places it', async ({
  server,
  operatorToken,
}) => {
  const author = await server.signUp();
  const register = (body: Record<string, unknown>) =>
    call<{ name: string; status: string }>(server, 'POST', '/conventions', {
      token: author.api_token,
      body,
    });

  for (const count of [4, 10]) {
    const answer = await register({
      name: 'garden-care',
      description: 'Mowing, pruning and planting.',
      dimensions: dimensions(count),
    });
    assert.is(answer.status, 422, `${count} dimensions: ${JSON.stringify(answer.body)}`);
    assert.is(answer.body.code, 'convention_invalid');
    assert.ok(answer.body.problems?.some((p) => p.field === 'dimensions'));
  }
  for (const name of ['ai-consulting', 'agent-setup']) {
    const answer = await register({
      name,
      description: 'Sessions by video.',
      dimensions: dimensions(5),
    });
    assert.is(answer.status, 422, `${name}: ${JSON.stringify(answer.body)}`);
    assert.is(answer.body.code, 'convention_reserved', name);
  }
  const nearDuplicate = await register({
    name: 'local-service',
    description: 'Services done in person.',
    dimensions: dimensions(5),
  });
  assert.is(nearDuplicate.status, 409, JSON.stringify(nearDuplicate.body));
  assert.is(nearDuplicate.body.code, 'convention_exists');
  assert.is(nearDuplicate.body.existing, 'local-services');

  const made = await register(petSitting);
  assert.is(made.status, 201, JSON.stringify(made.body));
  assert.equal(made.body, { name: 'pet-sitting', status: 'unplaced' });

  const listing = await postListing(server, author, {
    kind: 'can',
    convention: 'pet-sitting',
    name: 'Cat sitting in Berlin',
    description: 'Two visits a day.',
    can: 'I feed and play with your cats.',
    dimensions: { species: 'cats', town: 'Berlin', overnight: 'no' },
  });
  assert.is(listing.status, 201, JSON.stringify(listing.body));
  const inWilderness = (await wholeStore(server)).find(
    (l) => l.listing_id === listing.body.listing_id,
  );
  assert.is(inWilderness?.placed, false);
  assert.is(inWilderness?.placement, null);
  assert.match(
    await (await server.get('/store?convention=pet-sitting')).text(),
    /unplaced: in the wilderness/,
  );

  const path = ['root', 'local', 'pets'];
  const byAgent = await call(server, 'POST', '/conventions/pet-sitting/place', {
    token: author.api_token,
    body: { path },
  });
  assert.is(byAgent.status, 404, 'no such route for anyone but the operator');
  assert.is(byAgent.body.code, 'not_found');

  const placed = await call(server, 'POST', '/conventions/pet-sitting/place', {
    token: operatorToken,
    body: { path },
  });
  assert.is(placed.status, 200, JSON.stringify(placed.body));
  assert.equal(placed.body, { name: 'pet-sitting', status: 'placed', path });

  const feed = await call<ChangesPage>(server, 'GET', '/changes?after=c0&limit=500', {
    token: author.api_token,
  });
  const told = feed.body.changes.filter((c) => c.type === 'convention.placed');
  assert.is(told.length, 1, JSON.stringify(feed.body.changes.map((c) => c.type)));
  assert.is(told[0]?.data.name, 'pet-sitting');
  assert.is(told[0]?.data.status, 'placed');
  assert.equal(told[0]?.data.path, path);

  const nowPlaced = (await wholeStore(server)).find(
    (l) => l.listing_id === listing.body.listing_id,
  );
  assert.is(nowPlaced?.placed, true);
  assert.equal(nowPlaced?.placement, path);
  assert.match(
    await (await server.get('/store?convention=pet-sitting')).text(),
    /placement: root › local › pets/,
  );
});

test.run();
