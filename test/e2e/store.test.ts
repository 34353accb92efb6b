import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { io as connect, type Socket } from 'socket.io-client';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace, type TestAgent } from '../helpers/workspaces.ts';
import { connectMcp, changesUntil as changesUntilOf } from '../helpers/clients.ts';

/**
 * The store end to end, through the real doors: listings posted, replaced, edited as files and
 * deleted; the store read as markdown and JSON with its filters; conventions registered, placed
 * and related; watches pushed over socket.io, long-poll and MCP; matches; reputation.
 */

type Context = {
  server: TestServer;
  operatorToken: string;
  sockets: Socket[];
  clients: Client[];
};
const test = suite<Context>('the store through its HTTP, socket.io and MCP doors');

const DENIED = 'scam';

test.before(async (context) => {
  context.operatorToken = newToken();
  context.server = await startTestServer({
    operatorToken: context.operatorToken,
    storeDenyTerms: [DENIED],
  });
  context.sockets = [];
  context.clients = [];
});
test.after.each(async ({ sockets, clients }) => {
  for (const socket of sockets.splice(0)) socket.disconnect();
  for (const client of clients.splice(0)) await client.close();
});
test.after(async ({ server }) => {
  await server.close();
});

interface Listing {
  listing_id: string;
  kind: 'need' | 'can';
  convention: string | null;
  placed: boolean;
  placement: string[] | null;
  author: { agent_id: string; name: string };
  workspace_id: string;
  path: string;
  version: number;
  /** Everything the author wrote, apart from the service's fields. */
  agent_written: {
    name: string;
    description: string;
    need: string | null;
    can: string | null;
    contact?: string | null;
    dimensions: Record<string, unknown>;
  };
}
interface Posted {
  listing_id: string;
  workspace_id: string;
  path: string;
  version: number;
  matches: Listing[];
}
interface Problem {
  code: string;
  detail: string;
  problems?: { field: string; problem: string }[];
  existing?: string;
  terms?: string[];
}
interface Store {
  workspaces: { workspace_id: string; owner: { agent_id: string; name: string } }[];
  listings: Listing[];
  next_cursor: string | null;
}
interface Change {
  event_id: string;
  cursor: string;
  type: string;
  data: Record<string, unknown>;
}
interface ChangesPage {
  changes: Change[];
  cursor: string;
}

/** A request through the HTTP door; its status and parsed JSON body. */
async function call<T = Record<string, unknown>>(
  server: TestServer,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; accept?: string } = {},
): Promise<{ status: number; body: T & Partial<Problem> }> {
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.accept) headers.accept = options.accept;
  let body: string | undefined;
  if (typeof options.body === 'string') body = options.body;
  else if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  const response = await fetch(server.url(path), { method, headers, body });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : {}) as T & Partial<Problem> };
}

const postListing = (server: TestServer, agent: TestAgent, body: Record<string, unknown>) =>
  call<Posted>(server, 'POST', '/listings', { token: agent.api_token, body });

/** The store as JSON, with a token or without. */
const storeJson = (server: TestServer, query = '', token?: string) =>
  call<Store>(server, 'GET', `/store${query}`, {
    accept: 'application/json',
    ...(token ? { token } : {}),
  });

/** Every listing in the store (one page is enough for this suite). */
async function wholeStore(server: TestServer): Promise<Listing[]> {
  const answer = await storeJson(server, '?limit=500');
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  assert.is(answer.body.next_cursor, null, 'the whole store fits one page');
  return answer.body.listings;
}

const ids = (listings: Listing[]) => listings.map((listing) => listing.listing_id);

/** What the store holds, version by version: equal before and after means nothing changed. */
async function storeFingerprint(server: TestServer): Promise<string[]> {
  return (await wholeStore(server)).map((l) => `${l.listing_id}@${l.version}`).sort();
}

const fileUrl = (workspaceId: string, path: string) => `/workspaces/${workspaceId}/files/${path}`;

async function readText(server: TestServer, agent: TestAgent, workspaceId: string, path: string) {
  const response = await server.get(fileUrl(workspaceId, path), agent.api_token);
  assert.is(response.status, 200);
  return response.text();
}

const putFile = (
  server: TestServer,
  agent: TestAgent,
  workspaceId: string,
  path: string,
  text: string,
) =>
  call<{ receipt: { version: number } }>(server, 'PUT', fileUrl(workspaceId, path), {
    token: agent.api_token,
    body: text,
  });

/** A can listing on local-services in `place`; `extra` overrides its fields. */
const repairIn = (place: string, extra: Record<string, unknown> = {}) => ({
  kind: 'can',
  convention: 'local-services',
  name: `Bicycle repair in ${place}`,
  description: 'Flat tyres, brakes and gears, at your door.',
  can: 'I repair bicycles of every kind.',
  contact: 'bikes@example.org',
  dimensions: { service: 'bicycle repair', location: place, insured: 'yes' },
  ...extra,
});

/** A need listing on local-services in `place`. */
const needIn = (place: string) => ({
  kind: 'need',
  convention: 'local-services',
  name: `Someone to fix my bicycle in ${place}`,
  description: 'The back wheel wobbles.',
  need: 'A bicycle mechanic who comes to me.',
  dimensions: { service: 'bicycle repair', location: place },
});

/** Lets the event loop turn until `check` holds; bounded, and no timer is involved. */
async function turnsUntil(check: () => boolean, turns = 10_000): Promise<void> {
  for (let i = 0; i < turns && !check(); i++) await new Promise((resolve) => setImmediate(resolve));
  assert.ok(check(), 'the awaited state was reached');
}

function openSocket(context: Context, token: string): Socket {
  const socket = connect(context.server.baseUrl, {
    auth: { token },
    transports: ['websocket'],
    reconnection: false,
  });
  context.sockets.push(socket);
  return socket;
}

/** The change events the socket receives until the first of type `last`, included. */
const changesUntil = (socket: Socket, last: string) => changesUntilOf<Change>(socket, last);

/**
 * How long a long-poll waits at most: only a broken push ever waits that long (the test then
 * fails on an empty answer instead of hanging).
 */
const WAIT_SECONDS = 10;

async function mcpClient(context: Context, token: string): Promise<Client> {
  const client = await connectMcp(context.server, token, 'store-test');
  context.clients.push(client);
  return client;
}

const listingOf = (change: Change | undefined) =>
  (change?.data.listing ?? {}) as { listing_id?: string; agent_written?: { name: string } };

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
  const section = page.slice(page.indexOf(`### Can listing \`${posted.body.listing_id}\``));
  assert.ok(section.length < page.length, 'the listing is on the first page');
  const entry = section.split('\n### ')[0] as string;
  for (const expected of [
    author.name,
    author.agent_id,
    posted.body.workspace_id,
    posted.body.listing_id,
    'Version 1',
    '> Cargo bike repair',
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

test('relating conventions is for their authors; a shared place axis lets axis_values find both by place', async ({
  server,
}) => {
  const author = await server.signUp();
  const stranger = await server.signUp();
  const made = await call(server, 'POST', '/conventions', {
    token: author.api_token,
    body: {
      name: 'dog-walking',
      description: 'Walking dogs while their people are at work.',
      dimensions: [
        { key: 'breed', label: 'Breed', description: 'The dog, e.g. beagle.', required: true },
        { key: 'meeting_point', label: 'Meeting point', description: 'Where, e.g. Berlin.' },
        { key: 'walk_minutes', label: 'Walk length', description: 'Minutes, e.g. 45.' },
        { key: 'group_size', label: 'Group size', description: 'Dogs per walk, e.g. 3.' },
        { key: 'leash_trained', label: 'Leash trained', description: 'Yes or no.' },
      ],
    },
  });
  assert.is(made.status, 201, JSON.stringify(made.body));
  const walker = await postListing(server, author, {
    kind: 'can',
    convention: 'dog-walking',
    name: 'Dog walks in Berlin',
    description: 'Mornings in the Tiergarten.',
    can: 'Walks of an hour.',
    dimensions: { breed: 'any', meeting_point: 'Berlin' },
  });
  const lawyer = await postListing(server, stranger, {
    kind: 'can',
    convention: 'legal-services',
    name: 'Employment law in Berlin',
    description: 'Dismissals and contracts.',
    can: 'I represent employees.',
    dimensions: { practice_area: 'employment law', jurisdiction: 'Germany', city: 'Berlin' },
  });
  for (const posted of [walker, lawyer]) assert.is(posted.status, 201, JSON.stringify(posted.body));
  const inBerlin = async () => {
    const answer = await call<{ rows: unknown[][] }>(server, 'POST', '/index/sql', {
      token: stranger.api_token,
      body: {
        sql: "select convention, field, listing_id::text from axis_values where axis = 'place' and lower(value) = 'berlin' and listing_id = any($1::uuid[]) order by convention",
        params: [`{${walker.body.listing_id},${lawyer.body.listing_id}}`],
        scope: 'store',
      },
    });
    assert.is(answer.status, 200, JSON.stringify(answer.body));
    return answer.body.rows;
  };
  assert.equal(await inBerlin(), [['legal-services', 'city', lawyer.body.listing_id]]);

  const relation = {
    a: 'dog-walking',
    b: 'legal-services',
    shared_axes: [{ axis: 'place', a_field: 'meeting_point', b_field: 'city' }],
    differences: 'Dogs outdoors, not law.',
  };
  const refused = await call(server, 'POST', '/conventions/relate', {
    token: stranger.api_token,
    body: relation,
  });
  assert.is(refused.status, 403, JSON.stringify(refused.body));
  assert.is(refused.body.code, 'forbidden');
  assert.equal(await inBerlin(), [['legal-services', 'city', lawyer.body.listing_id]]);

  const related = await call<{ a: string; b: string; shared_axes: unknown[] }>(
    server,
    'POST',
    '/conventions/relate',
    { token: author.api_token, body: relation },
  );
  assert.is(related.status, 200, JSON.stringify(related.body));
  assert.equal(related.body.shared_axes, relation.shared_axes);
  assert.equal(await inBerlin(), [
    ['dog-walking', 'meeting_point', walker.body.listing_id],
    ['legal-services', 'city', lawyer.body.listing_id],
  ]);
});

test('a watch pushes each matching listing over socket.io, long-poll and MCP, and nothing else, until it is deleted', async (context) => {
  const { server } = context;
  const seller = await server.signUp();
  const watcher = await server.signUp();
  const socket = openSocket(context, watcher.api_token);
  assert.is((await changesUntil(socket, 'agent.welcome')).length, 1);
  // The watcher's own feedback marks the end of what the socket is to see, with no timer.
  const feedback = async () => {
    const sent = await server.post(
      '/feedback',
      { message: 'hi', category: 'other' },
      watcher.api_token,
    );
    assert.is(sent.status, 202);
  };

  const watched = await call<{ watch_id: string }>(server, 'POST', '/watches', {
    token: watcher.api_token,
    body: { convention: 'local-services', axis: 'place', value: 'Berlin' },
  });
  assert.is(watched.status, 201, JSON.stringify(watched.body));
  const { watch_id } = watched.body;
  // Moves the remembered place past the welcome, so the long-polls wait for what comes next.
  await server.get('/changes', watcher.api_token);
  const overSocket = changesUntil(socket, 'feedback.received');

  // The long-poll is parked (beside the socket) before the listing is posted.
  const waiting = call<ChangesPage>(server, 'GET', `/changes/wait?timeout=${WAIT_SECONDS}`, {
    token: watcher.api_token,
  });
  await turnsUntil(() => server.services.hub.listenerCount(watcher.agent_id) === 2);
  const first = await postListing(server, seller, repairIn('Berlin'));
  assert.is(first.status, 201, JSON.stringify(first.body));
  const polled = await waiting;
  assert.is(polled.status, 200);
  assert.equal(
    polled.body.changes.map((c) => [c.type, listingOf(c).listing_id]),
    [['listing.posted', first.body.listing_id]],
  );
  const [posted] = polled.body.changes;
  assert.is(posted?.data.watch_id, watch_id);
  assert.is(posted?.data.change, 'posted');
  assert.is(listingOf(posted).agent_written?.name, 'Bicycle repair in Berlin');

  // MCP, parked; a listing in Hamburg must not wake it: the next Berlin one does.
  const client = await mcpClient(context, watcher.api_token);
  const overMcp = client.callTool({
    name: 'wait_for_changes',
    arguments: { timeout: WAIT_SECONDS },
  });
  await turnsUntil(() => server.services.hub.listenerCount(watcher.agent_id) === 2);
  const hamburg = await postListing(server, seller, repairIn('Hamburg'));
  assert.is(hamburg.status, 201, JSON.stringify(hamburg.body));
  const second = await postListing(server, seller, repairIn('Berlin', { name: 'Wheels trued' }));
  assert.is(second.status, 201, JSON.stringify(second.body));
  const waited = (await overMcp) as { isError?: boolean; structuredContent?: ChangesPage };
  assert.not.ok(waited.isError, JSON.stringify(waited));
  assert.equal(
    waited.structuredContent?.changes.map((c) => [c.type, listingOf(c).listing_id]),
    [['listing.posted', second.body.listing_id]],
  );

  await feedback();
  assert.equal(
    (await overSocket).map((c) => [c.type, listingOf(c).listing_id]),
    [
      ['listing.posted', first.body.listing_id],
      ['listing.posted', second.body.listing_id],
      ['feedback.received', undefined],
    ],
    'socket.io carried both Berlin listings and not the Hamburg one',
  );

  const listed = await call<{ watches: { watch_id: string; value: string }[] }>(
    server,
    'GET',
    '/watches',
    { token: watcher.api_token },
  );
  assert.equal(
    listed.body.watches.map((w) => [w.watch_id, w.value]),
    [[watch_id, 'Berlin']],
  );
  const deleted = await call(server, 'DELETE', `/watches/${watch_id}`, {
    token: watcher.api_token,
  });
  assert.equal(deleted.body, { watch_id, deleted: true });
  const none = await call<{ watches: unknown[] }>(server, 'GET', '/watches', {
    token: watcher.api_token,
  });
  assert.equal(none.body.watches, []);
  const again = await call(server, 'DELETE', `/watches/${watch_id}`, {
    token: watcher.api_token,
  });
  assert.is(again.status, 404);

  const afterDelete = changesUntil(socket, 'feedback.received');
  const third = await postListing(server, seller, repairIn('Berlin', { name: 'Chains oiled' }));
  assert.is(third.status, 201, JSON.stringify(third.body));
  await feedback();
  assert.equal(
    (await afterDelete).map((c) => c.type),
    ['feedback.received'],
    'nothing pushed after the delete',
  );
});

test('an agent holds at most 100 watches, and a watch must name something', async ({ server }) => {
  const watcher = await server.signUp();
  for (let i = 0; i < 100; i++) {
    const made = await call(server, 'POST', '/watches', {
      token: watcher.api_token,
      body: { q: `bicycle ${i}` },
    });
    assert.is(made.status, 201, JSON.stringify(made.body));
  }
  const over = await call<{ limit: number }>(server, 'POST', '/watches', {
    token: watcher.api_token,
    body: { convention: 'local-services' },
  });
  assert.is(over.status, 409, JSON.stringify(over.body));
  assert.is(over.body.code, 'limit_reached');
  const held = await call<{ watches: unknown[] }>(server, 'GET', '/watches', {
    token: watcher.api_token,
  });
  assert.is(held.body.watches.length, 100);

  const someone = await server.signUp();
  const empty = await call(server, 'POST', '/watches', { token: someone.api_token, body: {} });
  assert.is(empty.status, 400, JSON.stringify(empty.body));
  assert.is(empty.body.code, 'invalid_input');
  const halfAxis = await call(server, 'POST', '/watches', {
    token: someone.api_token,
    body: { axis: 'place' },
  });
  assert.is(halfAxis.status, 400, JSON.stringify(halfAxis.body));
  assert.is(halfAxis.body.code, 'invalid_input');
});

test('a can listing names the needs it fits in matches: same convention and place', async ({
  server,
}) => {
  const buyer = await server.signUp();
  const seller = await server.signUp();
  const need = await postListing(server, buyer, needIn('Berlin'));
  assert.is(need.status, 201, JSON.stringify(need.body));

  const berlin = await postListing(server, seller, repairIn('Berlin'));
  assert.is(berlin.status, 201, JSON.stringify(berlin.body));
  const match = berlin.body.matches.find((l) => l.listing_id === need.body.listing_id);
  assert.ok(match, 'the Berlin need is named');
  assert.is(match.kind, 'need');
  assert.is(match.agent_written.name, 'Someone to fix my bicycle in Berlin');
  assert.ok(
    berlin.body.matches.every((l) => l.kind === 'need' && l.convention === 'local-services'),
    'only needs on local-services',
  );

  const munich = await postListing(server, seller, repairIn('Munich'));
  assert.is(munich.status, 201, JSON.stringify(munich.body));
  assert.not.ok(ids(munich.body.matches).includes(need.body.listing_id), 'not in Munich');
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
    counts: {
      deals_agreed: 0,
      payments_made: 0,
      payments_received: 0,
      payment_backed_ratings: 0,
      offchain_payments_confirmed: 0,
      distinct_counterparties: 0,
    },
    counterparties: [],
    ratings: [],
    payments: [],
  });
  const unknown = await call(server, 'GET', `/agents/${randomUUID()}/reputation`);
  assert.is(unknown.status, 404);
  assert.is(unknown.body.code, 'not_found');
});

test.run();
