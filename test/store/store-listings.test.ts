import * as assert from 'uvu/assert';
import { request as call } from '../helpers/http.ts';
import {
  DENIED,
  fileUrl,
  ids,
  needIn,
  postListing,
  putFile,
  readText,
  repairIn,
  storeFingerprint,
  storeSuite,
  wholeStore,
} from '../helpers/store.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * Listings end to end, through the real doors: posted (the author's public listings workspace
 * is made on the first), replaced, edited as files and deleted; bad listings refused each with
 * its own code, leaving the store and the files as they were. The matches a listing names,
 * through the direct door: store-listings-rules.test.ts.
 */
const test = storeSuite('store listings through HTTP');

test('a first can listing makes the public listings workspace of its author, and the second goes there too', async ({
  server,
}) => {
  const author = await server.signUp();
  const first = await postListing(server, author, {
    kind: 'can',
    name: 'Proofreading of English texts',
    description: 'Grammar, spelling and style.',
    can: 'I proofread up to 20 pages a day.',
  });
  assert.is(first.status, 201, JSON.stringify(first.body));
  assert.equal(Object.keys(first.body).sort(), [
    'listing_id',
    'matches',
    'path',
    'version',
    'workspace_id',
  ]);
  assert.is(first.body.version, 1);
  assert.equal(first.body.matches, []);
  assert.is(first.body.path, `listings/${first.body.listing_id}.md`);

  const second = await postListing(server, author, repairIn('Leipzig'));
  assert.is(second.status, 201, JSON.stringify(second.body));
  assert.is(second.body.workspace_id, first.body.workspace_id);
  assert.is.not(second.body.listing_id, first.body.listing_id);

  const text = await readText(server, author, first.body.workspace_id, first.body.path);
  assert.match(text, /^---\n[\s\S]*\n---\n/);
  assert.match(text, /^kind: can$/m);
  assert.match(text, /^name: Proofreading of English texts$/m);
  assert.match(text, /^can: I proofread up to 20 pages a day\.$/m);

  const mine = await call<{
    workspaces: {
      workspace_id: string;
      visibility: string;
      owner_agent_id: string;
      role: string;
    }[];
  }>(server, 'GET', '/workspaces', { token: author.api_token });
  assert.is(mine.body.workspaces.length, 1, JSON.stringify(mine.body));
  const [workspace] = mine.body.workspaces;
  assert.is(workspace?.workspace_id, first.body.workspace_id);
  assert.is(workspace?.visibility, 'public');
  assert.is(workspace?.owner_agent_id, author.agent_id);
  assert.is(workspace?.role, 'owner');
});

test('replacing a listing by listing_id answers 200 with version 2, and deleting it takes it out of the store once', async ({
  server,
}) => {
  const author = await server.signUp();
  const posted = await postListing(server, author, repairIn('Dresden'));
  assert.is(posted.status, 201, JSON.stringify(posted.body));
  const { listing_id } = posted.body;

  const replaced = await postListing(
    server,
    author,
    repairIn('Dresden', { listing_id, name: 'Bicycle and scooter repair in Dresden' }),
  );
  assert.is(replaced.status, 200, JSON.stringify(replaced.body));
  assert.is(replaced.body.version, 2);
  assert.is(replaced.body.listing_id, listing_id);
  assert.is(replaced.body.path, posted.body.path);

  const shown = (await wholeStore(server)).find((l) => l.listing_id === listing_id);
  assert.is(shown?.version, 2);
  assert.is(shown?.agent_written.name, 'Bicycle and scooter repair in Dresden');

  const deleted = await call(server, 'DELETE', `/listings/${listing_id}`, {
    token: author.api_token,
  });
  assert.is(deleted.status, 200, JSON.stringify(deleted.body));
  assert.equal(deleted.body, { listing_id, deleted: true });
  assert.not.ok(ids(await wholeStore(server)).includes(listing_id), 'gone from the store');

  const again = await call(server, 'DELETE', `/listings/${listing_id}`, {
    token: author.api_token,
  });
  assert.is(again.status, 404);
  assert.is(again.body.code, 'not_found');
});

test('editing a listing file with PUT is checked like posting, and deleting the file takes the listing out of the store', async ({
  server,
}) => {
  const author = await server.signUp();
  const posted = await postListing(server, author, repairIn('Bremen'));
  assert.is(posted.status, 201, JSON.stringify(posted.body));
  const { workspace_id, path, listing_id } = posted.body;
  const original = await readText(server, author, workspace_id, path);

  const unknownDimension = original.replace('location: Bremen', 'location: Bremen\ncolour: red');
  const refused = await putFile(server, author, workspace_id, path, unknownDimension);
  assert.is(refused.status, 422, JSON.stringify(refused.body));
  assert.is(refused.body.code, 'listing_invalid');
  assert.equal(
    refused.body.problems?.map((p) => p.field),
    ['dimensions.colour'],
  );
  assert.is(await readText(server, author, workspace_id, path), original, 'the file is as it was');
  assert.is((await wholeStore(server)).find((l) => l.listing_id === listing_id)?.version, 1);

  const edited = await putFile(
    server,
    author,
    workspace_id,
    path,
    original.replace('location: Bremen', 'location: Oldenburg'),
  );
  assert.is(edited.status, 201, JSON.stringify(edited.body));
  assert.is(edited.body.receipt.version, 2);
  const shown = (await wholeStore(server)).find((l) => l.listing_id === listing_id);
  assert.is(shown?.version, 2);
  assert.is(shown?.agent_written.dimensions.location, 'Oldenburg');

  const removed = await call(server, 'DELETE', fileUrl(workspace_id, path), {
    token: author.api_token,
  });
  assert.is(removed.status, 200, JSON.stringify(removed.body));
  assert.not.ok(ids(await wholeStore(server)).includes(listing_id), 'gone from the store');
  const gone = await call(server, 'DELETE', `/listings/${listing_id}`, {
    token: author.api_token,
  });
  assert.is(gone.status, 404);
});

test('bad listings answer each its own code and leave the store and the files as they were', async ({
  server,
  operatorToken,
}) => {
  const author = await server.signUp();
  const other = await server.signUp();
  const posted = await postListing(server, author, repairIn('Kiel'));
  assert.is(posted.status, 201, JSON.stringify(posted.body));
  const { workspace_id, path } = posted.body;
  const original = await readText(server, author, workspace_id, path);
  const theirPublic = await newWorkspace(server, other, 'public');
  const theirPrivate = await newWorkspace(server, other, 'private');
  const myPrivate = await newWorkspace(server, author, 'private');
  const filesOf = async () =>
    (
      await call<{ files: unknown[] }>(server, 'GET', `/workspaces/${workspace_id}/files`, {
        token: author.api_token,
      })
    ).body.files.length;
  const before = { store: await storeFingerprint(server), files: await filesOf() };

  const without = (key: string) =>
    Object.fromEntries(Object.entries(repairIn('Kiel')).filter(([k]) => k !== key));
  const nameless = without('name');
  const withoutCan = without('can');
  const cases: {
    why: string;
    body: Record<string, unknown>;
    status: number;
    code: string;
    field?: string;
  }[] = [
    { why: 'a missing name', body: nameless, status: 422, code: 'listing_invalid', field: 'name' },
    {
      why: 'a need listing without need',
      body: { ...needIn('Kiel'), need: undefined },
      status: 422,
      code: 'listing_invalid',
      field: 'need',
    },
    {
      why: 'a can listing without can',
      body: withoutCan,
      status: 422,
      code: 'listing_invalid',
      field: 'can',
    },
    {
      why: 'an unknown dimension',
      body: repairIn('Kiel', {
        dimensions: { service: 'bicycle repair', location: 'Kiel', colour: 'red' },
      }),
      status: 422,
      code: 'listing_invalid',
      field: 'dimensions.colour',
    },
    {
      why: 'a value outside the allowed ones',
      body: repairIn('Kiel', {
        dimensions: { service: 'bicycle repair', location: 'Kiel', insured: 'maybe' },
      }),
      status: 422,
      code: 'listing_invalid',
      field: 'dimensions.insured',
    },
    {
      why: 'a name of 201 characters',
      body: repairIn('Kiel', { name: 'n'.repeat(201) }),
      status: 422,
      code: 'listing_invalid',
      field: 'name',
    },
    {
      why: "someone else's public workspace",
      body: repairIn('Kiel', { workspace_id: theirPublic }),
      status: 403,
      code: 'forbidden',
    },
    {
      why: "someone else's private workspace",
      body: repairIn('Kiel', { workspace_id: theirPrivate }),
      status: 404,
      code: 'not_found',
    },
    {
      why: 'a private workspace of my own',
      body: repairIn('Kiel', { workspace_id: myPrivate }),
      status: 422,
      code: 'listing_invalid',
      field: 'workspace_id',
    },
    {
      why: 'a convention that does not exist',
      body: repairIn('Kiel', { convention: 'bicycle-things' }),
      status: 422,
      code: 'listing_invalid',
      field: 'convention',
    },
    {
      why: 'remote agent-help offered by anyone but the operator',
      body: {
        kind: 'can',
        convention: 'agent-help',
        name: 'I set up your agent',
        description: 'Remote sessions.',
        can: 'Setup and debugging.',
        dimensions: { topic: 'setup', delivery: 'remote' },
      },
      status: 422,
      code: 'listing_invalid',
      field: 'dimensions.delivery',
    },
    {
      why: 'a term on the deny-list',
      body: repairIn('Kiel', { description: `Not a ${DENIED.toUpperCase()}, honest.` }),
      status: 422,
      code: 'content_refused',
    },
  ];
  for (const { why, body, status, code, field } of cases) {
    const answer = await postListing(server, author, body);
    assert.is(answer.status, status, `${why}: ${JSON.stringify(answer.body)}`);
    assert.is(answer.body.code, code, why);
    if (field !== undefined && status === 422) {
      assert.ok(
        answer.body.problems?.some((p) => p.field === field),
        `${why}: problems name ${field}: ${JSON.stringify(answer.body.problems)}`,
      );
      assert.match(answer.body.detail ?? '', field, why);
    } else if (field !== undefined) {
      assert.match(JSON.stringify(answer.body), field, why);
    }
  }
  const denied = await postListing(server, author, repairIn('Kiel', { name: `${DENIED} deal` }));
  assert.equal(denied.body.terms, [DENIED], 'content_refused names the term');

  // Billion laughs: nine anchors, each nine aliases of the one before.
  const bomb = [
    '---',
    'kind: can',
    'convention: local-services',
    'name: Laughs',
    'description: Many',
    'can: Laugh',
    'a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]',
    ...'bcdefghi'
      .split('')
      .map((key, i) => `${key}: &${key} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(', ')}]`),
    '---',
    '',
  ].join('\n');
  const exploded = await putFile(server, author, workspace_id, path, bomb);
  assert.is(exploded.status, 422, JSON.stringify(exploded.body));
  assert.is(exploded.body.code, 'listing_invalid');
  assert.equal(
    exploded.body.problems?.map((p) => p.field),
    ['header'],
  );
  assert.match(exploded.body.detail ?? '', /header/);
  assert.is(await readText(server, author, workspace_id, path), original, 'the file is as it was');

  assert.equal(await filesOf(), before.files, 'no file was written');
  assert.equal(await storeFingerprint(server), before.store, 'the store is as it was');

  // The agent-help refusal is about who offers: the operator may offer remote help.
  const operator = { agent_id: server.services.operatorId, api_token: operatorToken };
  const byOperator = await postListing(server, operator, {
    kind: 'can',
    convention: 'agent-help',
    name: 'Help with your own agent',
    description: 'Remote sessions.',
    can: 'Setup and debugging.',
    dimensions: { topic: 'setup', delivery: 'remote' },
  });
  assert.is(byOperator.status, 201, JSON.stringify(byOperator.body));
});

test.run();
