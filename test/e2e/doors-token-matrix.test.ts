import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { STORAGE_LINK_PREFIX } from '../../protocol/files/storage-links.ts';
import { TestClock } from '../helpers/clock.ts';
import { callJson } from '../helpers/http.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import { madeToken, revokeToken, type TokenProblem } from '../helpers/tokens.ts';
import { addKey, newKey, signedJson } from '../helpers/signatures.ts';

/**
 * Every door times every limit of a token (issue 32 §4): each cell names the test that holds it,
 * or is a documented exclusion with its reason. The doors are read from the service itself
 * (every path of /openapi.json is an operation, /mcp, the storage-link door or a document) plus
 * the doors OpenAPI cannot show, so that a new door without a row fails here. Then every
 * operation of the table is called over HTTP with a revoked, an expired and a suspended token.
 */
const test = serverSuite<{ clock: TestClock; operatorToken: string }>(
  'doors: every door holds every limit of a token',
  () => {
    const clock = new TestClock();
    const operatorToken = newToken();
    return { extra: { clock, operatorToken }, config: { clock, operatorToken } };
  },
);

const LIMITS = [
  'revoked',
  'expired',
  'suspended',
  'read scope',
  'workspace scope',
  'signature policy',
] as const;
type Limit = (typeof LIMITS)[number];

/** Where a cell is held: a test (file: name) or, for an exclusion, why it cannot apply. */
type Cell = { test: string } | { excluded: string };

const ENDS = 'doors-token-ends.test.ts';
const MATRIX = 'doors-token-matrix.test.ts';
const SCOPES = 'token-scopes.test.ts';
const SOCKETS = 'token-doors-sockets.test.ts';
const FEED = 'token-doors-feed.test.ts';
const SIGNED = 'signed-requests.test.ts';
const SIGNED_DOORS = 'signed-requests-doors.test.ts';
const FEED_IS_READING =
  'the feed only reads (readScope handler): under the policy an unsigned caller reads it, its place moving as reading moves it';

const each = (cell: Cell): Record<'revoked' | 'expired' | 'suspended', Cell> => ({
  revoked: cell,
  expired: cell,
  suspended: cell,
});

const MAIL_HAS_NO_TOKEN =
  'mail acts by address, proven by its mail (principal.token is null): no API token reaches it';

const DOORS: Record<string, Record<Limit, Cell>> = {
  http: {
    ...each({ test: `${MATRIX}: every operation over HTTP` }),
    'read scope': { test: `${SCOPES}: a read token writing anything gets 403` },
    'workspace scope': { test: `${SCOPES}: a workspace token reaching another workspace` },
    'signature policy': { test: `${MATRIX}: every operation over HTTP, unsigned under the policy` },
  },
  mcp: {
    ...each({ test: 'moderation-suspension.test.ts, tokens.test.ts: MCP tool calls' }),
    revoked: { test: `${ENDS}: wait_for_changes over MCP, parked` },
    'read scope': { test: `${SCOPES}: over MCP a restricted token's refusal` },
    'workspace scope': { test: `${SCOPES}: over MCP a restricted token's refusal` },
    'signature policy': { test: `${SIGNED_DOORS}: MCP, unsigned and signed POSTs` },
  },
  'mcp stream': {
    ...each({ excluded: 'the MCP door is stateless: GET /mcp answers 405, no stream is held' }),
    revoked: { test: `${ENDS}: GET /mcp is refused at once` },
    'read scope': { excluded: 'no MCP stream exists to hold' },
    'workspace scope': { excluded: 'no MCP stream exists to hold' },
    'signature policy': { excluded: 'no MCP stream exists to hold' },
  },
  'socket.io': {
    ...each({ test: `${SOCKETS} (server/socket/door.ts: services.tokens.watch)` }),
    'read scope': { test: `${SOCKETS}` },
    'workspace scope': { test: `${SOCKETS}` },
    'signature policy': { test: `${SIGNED_DOORS}: socket.io, an unsigned connection's ack` },
  },
  'long-poll': {
    ...each({ test: `${ENDS}: a long-poll parked with a full, read, workspace token` }),
    'read scope': { test: `${FEED}: a restricted token reads from its own place` },
    'workspace scope': { test: `${FEED}: a workspace token's long-poll` },
    'signature policy': { excluded: FEED_IS_READING },
  },
  'storage link': {
    ...each({ test: `${ENDS}: a storage link made by a token stops` }),
    'read scope': { test: `${ENDS}: a storage link of a read token stays read-only` },
    'workspace scope': { test: 'the link signs its one workspace (storage-link-refusals.test.ts)' },
    'signature policy': { test: `${SIGNED_DOORS}: storage links, minted only signed` },
  },
  'idempotent replay': {
    ...each({ test: `${MATRIX}: authentication comes before any replay (HTTP row)` }),
    'read scope': { test: `${ENDS}: a restricted token repeating a full token's key` },
    'workspace scope': { test: `${ENDS}: a restricted token repeating a full token's key` },
    'signature policy': {
      test: `${SIGNED}: a replay of the signed write's key by the token alone`,
    },
  },
  mail: {
    revoked: { excluded: MAIL_HAS_NO_TOKEN },
    expired: { excluded: MAIL_HAS_NO_TOKEN },
    suspended: { test: 'moderation-suspension.test.ts: its mail' },
    'read scope': { excluded: MAIL_HAS_NO_TOKEN },
    'workspace scope': { excluded: MAIL_HAS_NO_TOKEN },
    'signature policy': {
      test: 'mailgate.test.ts: key commands by mail wait for a confirmation (mail is proven by mail, not a token)',
    },
  },
  webhooks: {
    revoked: { excluded: "a webhook is the agent's, not a token's: a token's end leaves it" },
    expired: { excluded: "a webhook is the agent's, not a token's: a token's end leaves it" },
    suspended: { test: 'webhooks.test.ts: a suspended agent gets no deliveries' },
    'read scope': { excluded: 'set_webhook writes: a read token is refused it (HTTP row)' },
    'workspace scope': {
      excluded: 'set_webhook reaches the account: a workspace token is refused it (HTTP row)',
    },
    'signature policy': { excluded: 'set_webhook writes: unsigned, it is refused (HTTP row)' },
  },
  documents: {
    ...each({ excluded: 'the reference documents and /health take no token' }),
    'read scope': { excluded: 'the reference documents take no token' },
    'workspace scope': { excluded: 'the reference documents take no token' },
    'signature policy': { excluded: 'the reference documents take no token and write nothing' },
  },
};

/** The door a path of /openapi.json belongs to; undefined: a door with no row. */
function doorOf(
  path: string,
  item: Record<string, { security?: unknown[] }>,
  operationPaths: ReadonlySet<string>,
): string | undefined {
  if (operationPaths.has(path)) return 'http';
  if (path === '/mcp') return 'mcp';
  if (path.startsWith(`${STORAGE_LINK_PREFIX}/`)) return 'storage link';
  // What takes no token at all (documents, /health, the pay script): `security: []` throughout.
  const methods = Object.values(item).filter((entry) => typeof entry === 'object');
  if (methods.length > 0 && methods.every((method) => method.security?.length === 0)) {
    return 'documents';
  }
  return undefined;
}

/** OpenAPI writes `/a/{b}` where the table writes `/a/:b`. */
const openApiPath = (path: string) => path.replace(/[:*]([a-z_]+)/g, '{$1}');

test('every door the service mounts has a row, and every row every limit', async ({ server }) => {
  const spec = (await (await server.get('/openapi.json')).json()) as {
    paths: Record<string, Record<string, { security?: unknown[] }>>;
  };
  const operationPaths = new Set(OPERATION_LIST.map((op) => openApiPath(op.path)));
  const doors = new Set<string>();
  for (const [path, item] of Object.entries(spec.paths)) {
    const door = doorOf(path, item, operationPaths);
    assert.ok(door, `${path}: a door with no row in DOORS`);
    doors.add(door);
  }
  // Doors OpenAPI cannot show: they are mounted beside it (server/app.ts, server/email).
  for (const door of ['socket.io', 'long-poll', 'idempotent replay', 'mail', 'webhooks']) {
    doors.add(door);
  }
  // /mcp's GET (a standing stream) is a door of its own, held by its row's test (405 now).
  if (doors.has('mcp')) doors.add('mcp stream');
  assert.equal([...doors].sort(), Object.keys(DOORS).sort(), 'every door, and only doors');
  for (const [door, row] of Object.entries(DOORS)) {
    for (const limit of LIMITS) {
      const cell = row[limit];
      const said = 'test' in cell ? cell.test : cell.excluded;
      assert.ok(said.length > 10, `${door} × ${limit}: says where it is held or why not`);
    }
  }
});

/** A path of the operation with every parameter filled: a token is checked before the rest. */
const filled = (path: string) =>
  path.replace(/[:*]([a-z_]+)/g, (_, name: string) =>
    name === 'path' ? 'x.md' : '00000000-0000-4000-8000-000000000000',
  );

test('every operation over HTTP refuses a revoked, an expired and a suspended token with 401 and the reason, keyed or not', async ({
  server,
  clock,
  operatorToken,
}) => {
  const revoked = await server.signUp();
  const gone = await madeToken(server, revoked.api_token, { name: 'gone' });
  assert.is((await revokeToken(server, revoked.api_token, gone.token_id)).status, 200);
  const expiring = await server.signUp();
  const old = await madeToken(server, expiring.api_token, { name: 'old', expires_in_hours: 1 });
  clock.advance(3_600_000 + 1);
  const suspended = await server.signUp();
  const stopped = await callJson(
    server,
    'POST',
    `/operator/agents/${suspended.agent_id}/suspend`,
    operatorToken,
    { reason: 'A test of every door.' },
  );
  assert.is(stopped.status, 200, JSON.stringify(stopped.body));
  const tokens = {
    revoked: gone.api_token,
    expired: old.api_token,
    suspended: suspended.api_token,
  };
  const operations = OPERATION_LIST.filter((op) => op.auth !== 'none' && !op.operatorOnly);
  assert.ok(operations.length > 20, 'the table was read');
  for (const operation of operations) {
    for (const [reason, token] of Object.entries(tokens)) {
      const response = await fetch(server.url(filled(operation.path)), {
        method: operation.method,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          // Authentication comes before any replay: a key changes nothing here (a
          // secret-minting operation refuses any key, before anything else).
          ...(!operation.mintsSecret && { 'idempotency-key': crypto.randomUUID() }),
        },
      });
      const body = (await response.json()) as TokenProblem;
      const what = `${operation.name} with a ${reason} token`;
      assert.is(response.status, 401, `${what}: ${JSON.stringify(body)}`);
      assert.is(body.reason, reason, what);
    }
  }
});

test('every operation over HTTP, unsigned under the policy: each write answers 401 signature_required, each read never does', async ({
  server,
  clock,
}) => {
  const agent = await server.signUp();
  const key = newKey();
  await addKey(server, agent.api_token, key);
  // Signed at the service's clock (this suite's test clock), as a signer's clock must agree.
  const set = await signedJson(
    server,
    key,
    'PUT',
    '/whoami/signature-policy',
    agent.api_token,
    { require_signature: true },
    { created: new Date(clock.now()) },
  );
  assert.is(set.status, 200, JSON.stringify(set.body));
  const operations = OPERATION_LIST.filter((op) => op.auth !== 'none' && !op.operatorOnly);
  let writes = 0;
  for (const operation of operations) {
    // The long-poll would wait: it reads, and a read is not refused (its own row says so).
    if (operation.name === 'wait_for_changes') continue;
    const response = await fetch(server.url(filled(operation.path)), {
      method: operation.method,
      headers: {
        authorization: `Bearer ${agent.api_token}`,
        accept: 'application/json',
        ...(!operation.mintsSecret && { 'idempotency-key': crypto.randomUUID() }),
      },
    });
    const text = await response.text();
    const code = text.startsWith('{') ? (JSON.parse(text) as { code?: string }).code : undefined;
    // A write, or what mints a bearer secret of its own (a storage link that only reads).
    const writesState =
      (operation.readOnly !== true && operation.readScope !== 'handler') ||
      operation.mintsSecret === true;
    if (writesState) {
      writes++;
      assert.is(response.status, 401, `${operation.name}: ${text}`);
      assert.is(code, 'signature_required', operation.name);
    } else {
      assert.is.not(code, 'signature_required', `${operation.name} only reads: ${text}`);
    }
  }
  assert.ok(writes > 40, 'the table was read');
});

test.run();
