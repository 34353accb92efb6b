import { createHash } from 'node:crypto';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import type { Operation } from '../../protocol/operation.ts';
import { agree, dealText, deliver, lineOf, listed } from '../helpers/deals.ts';
import { storageLink } from '../helpers/storage-links.ts';
import { HIDDEN_REPAIR, hideListing, postedListing, storeSuite } from '../helpers/store.ts';
import type { TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { saveFile } from '../helpers/workspaces.ts';

/**
 * Hidden stays hidden in every operation that names or returns a workspace's file (issue 32 §3):
 * the operations are read from the operation table (an input with `workspace_id` and `path`, or
 * an answer with `path`/`paths`), and each has a row here, or the first test fails. A row calls
 * its operation through the HTTP door on a hidden listing's file:
 *
 * - as an agent outside the workspace (it reads it: the workspace is public), where it must
 *   answer as for a path never saved (same status, code and bytes, the path aside), and never
 *   carry the hidden file's path (when the call did not name it) or its sha256;
 * - as the file's author (a member), where it answers as usual.
 *
 * Receipts: a non-member's list leaves out every receipt that names a withheld file (its saves,
 * a deal on it, a delivery pinning it), so its chain has gaps there; a member's is whole. Deals:
 * a party keeps its deal as it was agreed and delivered (its record), whoever else may not see
 * it. On the driver DATABASE_URL names (PGlite without it).
 */
const test = storeSuite('hidden files in every operation that names or returns one');

/** Why an operation the table shows as naming or returning a path has no row. */
const NOT_WORKSPACE_FILES: Record<string, string> = {
  place_convention: 'its `path` is a place in the convention tree, not a file',
  post_listing:
    "it writes the listing's file in a public workspace the caller owns (a member), and answers only that path",
};

function schemaKeys(schema: unknown): string[] {
  const keys: string[] = [];
  const walk = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    const n = node as Record<string, unknown>;
    for (const [key, child] of Object.entries((n.properties ?? {}) as Record<string, unknown>)) {
      keys.push(key);
      walk(child);
    }
    for (const key of ['items', 'anyOf', 'oneOf', 'allOf', 'additionalProperties']) {
      const child = n[key];
      if (Array.isArray(child)) child.forEach(walk);
      else walk(child);
    }
    for (const child of Object.values((n.$defs ?? {}) as Record<string, unknown>)) walk(child);
  };
  walk(z.toJSONSchema(schema as z.ZodType, { io: 'output', unrepresentable: 'any' }));
  return keys;
}

/** Operations whose input names a workspace's file or whose answer carries file paths. */
function fileOperations(): string[] {
  const names = (op: Operation) => {
    const input = Object.keys(op.input.shape);
    if (input.includes('workspace_id') && input.includes('path')) return true;
    return schemaKeys(op.output).some((key) => key === 'path' || key === 'paths');
  };
  return OPERATION_LIST.filter(names)
    .map((op) => op.name)
    .sort();
}

interface World {
  author: Agent;
  /** Outside the workspace; a party of the deal there. */
  outsider: Agent;
  /** Outside the workspace and every deal. */
  stranger: Agent;
  workspaceId: string;
  hiddenPath: string;
  hiddenSha256: string;
  listingId: string;
  dealId: string;
}

let world: World;

interface Answer {
  status: number | string;
  code?: string | undefined;
  text: string;
}

async function answerOf(response: Response): Promise<Answer> {
  const text = await response.text();
  let code: string | undefined;
  try {
    code = (JSON.parse(text) as { code?: string }).code;
  } catch {
    code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1];
  }
  return { status: response.status, code, text };
}

const send = (server: TestServer, method: string, url: string, agent: Agent, body?: unknown) =>
  fetch(server.url(url), {
    method,
    headers: {
      authorization: `Bearer ${agent.api_token}`,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  }).then(answerOf);

/** Several answers as one: the statuses and codes in order, and every text. */
function together(answers: Answer[]): Answer {
  return {
    status: answers.map((a) => a.status).join(' '),
    code: answers.map((a) => a.code ?? '-').join(' '),
    text: answers.map((a) => a.text).join('\n'),
  };
}

/**
 * A call that names the file: as an outsider it answers for the hidden file what it answers for
 * a path never saved; `member` is the author's status on the hidden file (null: not called, as
 * writing or deleting it would change the world the other rows read).
 */
interface Names {
  kind: 'names';
  call: (server: TestServer, agent: Agent, path: string) => Promise<Answer>;
  member: number | string | null;
  /** Compare the answers' bytes too (false where they carry a request id or a new id). */
  sameBytes?: boolean;
}

/** A call that does not name the file: an outsider's answer never names it; a member's may. */
interface Lists {
  kind: 'lists';
  call: (server: TestServer, agent: Agent) => Promise<Answer>;
  /** Whether the author's answer names the hidden file. */
  memberSees: boolean;
  /** The author's status, when not 200. */
  memberStatus?: number;
}

type Row = Names | Lists;

const ROWS: Record<string, Row[]> = {
  write_file: [
    {
      kind: 'names',
      call: (server, agent, path) =>
        send(server, 'PUT', `/workspaces/${world.workspaceId}/files/${path}`, agent, 'x'),
      member: null,
    },
  ],
  read_file: [
    {
      kind: 'names',
      call: async (server, agent, path) => {
        const url = `/workspaces/${world.workspaceId}/files/${path}`;
        return together([
          await send(server, 'GET', url, agent),
          await send(server, 'GET', `${url}?version=1`, agent),
          await send(server, 'HEAD', url, agent),
        ]);
      },
      member: '200 200 200',
    },
  ],
  delete_file: [
    {
      kind: 'names',
      call: (server, agent, path) =>
        send(server, 'DELETE', `/workspaces/${world.workspaceId}/files/${path}`, agent),
      member: null,
    },
  ],
  list_files: [
    {
      kind: 'lists',
      call: (server, agent) => send(server, 'GET', `/workspaces/${world.workspaceId}/files`, agent),
      memberSees: true,
    },
  ],
  list_receipts: [
    {
      kind: 'lists',
      call: (server, agent) =>
        send(server, 'GET', `/workspaces/${world.workspaceId}/receipts?limit=100`, agent),
      memberSees: true,
    },
    {
      kind: 'names',
      call: (server, agent, path) =>
        send(
          server,
          'GET',
          `/workspaces/${world.workspaceId}/receipts?path=${encodeURIComponent(path)}`,
          agent,
        ),
      member: 200,
    },
  ],
  get_storage_link: [
    {
      // The link is signed for any path; what it reaches goes through read_file: Get Blob and
      // Get Blob Properties.
      kind: 'names',
      call: async (server, agent, path) => {
        const link = await storageLink(server, agent, world.workspaceId, 'read', path);
        const url = link.file_url as string;
        return together([
          await fetch(url).then(answerOf),
          await fetch(url, { method: 'HEAD' }).then(answerOf),
        ]);
      },
      member: '200 200',
      sameBytes: false,
    },
  ],
  read_store: [
    {
      kind: 'lists',
      call: (server, agent) => send(server, 'GET', '/store', agent),
      memberSees: false,
    },
  ],
  get_listing: [
    {
      kind: 'lists',
      call: (server, agent) => send(server, 'GET', `/listings/${world.listingId}`, agent),
      memberSees: false,
      // Out of the store for everyone, its author too (hide_listing).
      memberStatus: 404,
    },
  ],
  list_my_listings: [
    {
      kind: 'lists',
      call: (server, agent) => send(server, 'GET', '/listings/mine', agent),
      memberSees: false,
    },
  ],
  get_agent_profile: [
    {
      kind: 'lists',
      call: (server, agent) => send(server, 'GET', `/agents/${world.author.agent_id}`, agent),
      memberSees: false,
    },
  ],
  get_deal: [
    {
      kind: 'names',
      call: (server, agent, path) =>
        send(
          server,
          'GET',
          `/deals?workspace_id=${world.workspaceId}&path=${encodeURIComponent(path)}`,
          agent,
        ),
      // A listing's file is no deal: the author is told so.
      member: 422,
    },
    {
      // The deal whose delivery pinned the hidden file, to one neither in it nor a member.
      kind: 'lists',
      call: (server, agent) => send(server, 'GET', `/deals?deal_id=${world.dealId}`, agent),
      memberSees: true,
    },
  ],
  list_deals: [
    {
      kind: 'lists',
      call: (server, agent) => send(server, 'GET', '/deals/mine', agent),
      memberSees: false,
    },
  ],
  agree: [
    {
      kind: 'names',
      call: (server, agent, path) =>
        send(server, 'POST', '/deals/agree', agent, {
          workspace_id: world.workspaceId,
          path,
          version: 1,
          sha256: world.hiddenSha256,
        }),
      member: 422,
    },
  ],
  deliver: [
    {
      kind: 'names',
      call: (server, agent, path) =>
        send(server, 'POST', '/deals/deliver', agent, { deal_id: world.dealId, files: [path] }),
      member: 201,
    },
  ],
  // Its answer's schema names no path, but its rows do (hidden-index-rows.test.ts probes more).
  query_index: [
    {
      kind: 'lists',
      call: (server, agent) =>
        send(server, 'POST', '/index/sql', agent, {
          sql: 'select path, sha256 from file_versions where workspace_id = $1::uuid',
          params: [world.workspaceId],
          scope: agent === world.author ? 'own' : 'public',
        }),
      memberSees: true,
    },
  ],
};

test.before(async ({ server, operatorToken }) => {
  const author = await server.signUp();
  const outsider = await server.signUp();
  const stranger = await server.signUp();
  const {
    workspace_id: workspaceId,
    path: hiddenPath,
    listing_id: listingId,
  } = await postedListing(server, author, HIDDEN_REPAIR);
  // A deal in the same public workspace between the author and the outsider, agreed by both.
  await saveFile(
    server,
    author,
    workspaceId,
    'deal.md',
    dealText('Repair', [author, outsider].map(lineOf)),
  );
  const at = await listed(server, author, workspaceId, 'deal.md');
  let dealId = '';
  for (const party of [author, outsider]) {
    const agreed = await agree(server, party, workspaceId, 'deal.md', at);
    assert.is(agreed.status, 200, JSON.stringify(agreed.body));
    dealId = agreed.body.deal_id;
  }
  const text = await server.get(`/workspaces/${workspaceId}/files/${hiddenPath}`, author.api_token);
  const hiddenSha256 = createHash('sha256')
    .update(await text.text())
    .digest('hex');
  await hideListing(server, operatorToken, listingId);
  world = { author, outsider, stranger, workspaceId, hiddenPath, hiddenSha256, listingId, dealId };
});

test('every operation that names or returns a workspace’s file has a row here (or a reason it names none)', () => {
  const covered = [...Object.keys(ROWS), ...Object.keys(NOT_WORKSPACE_FILES)];
  for (const name of fileOperations()) {
    assert.ok(covered.includes(name), `${name} names or returns workspace files: give it a row`);
  }
  for (const name of Object.keys(NOT_WORKSPACE_FILES)) {
    assert.ok(fileOperations().includes(name), `${name} no longer needs its reason`);
  }
});

const NEVER_SAVED = 'never/saved.md';

/** The answer with the path it was asked about made neutral, for comparing two paths' answers. */
const neutral = (answer: Answer, path: string) => ({
  status: answer.status,
  code: answer.code,
  text: answer.text.split(path).join('<path>').split(encodeURIComponent(path)).join('<path>'),
});

test('to an agent outside the workspace, every call naming the hidden file answers as for a path never saved', async ({
  server,
}) => {
  for (const [name, rows] of Object.entries(ROWS)) {
    for (const row of rows) {
      if (row.kind !== 'names') continue;
      for (const agent of [world.outsider, world.stranger]) {
        const hidden = neutral(await row.call(server, agent, world.hiddenPath), world.hiddenPath);
        const missing = neutral(await row.call(server, agent, NEVER_SAVED), NEVER_SAVED);
        assert.is(hidden.status, missing.status, `${name}: status`);
        assert.is(hidden.code, missing.code, `${name}: code`);
        if (row.sameBytes !== false) assert.is(hidden.text, missing.text, `${name}: bytes`);
        assert.not.ok(hidden.text.includes(world.hiddenSha256), `${name}: no sha256`);
      }
    }
  }
});

test('the author (a member) is answered as usual by every call naming the hidden file', async ({
  server,
}) => {
  for (const [name, rows] of Object.entries(ROWS)) {
    for (const row of rows) {
      if (row.kind !== 'names' || row.member === null) continue;
      const answer = await row.call(server, world.author, world.hiddenPath);
      assert.is(answer.status, row.member, `${name}: ${answer.text.slice(0, 300)}`);
    }
  }
});

test('no answer that lists files names the hidden file to an agent outside the workspace, and the member’s do', async ({
  server,
}) => {
  // The author's delivery above pinned the hidden file in the deal: its receipt names it.
  for (const [name, rows] of Object.entries(ROWS)) {
    for (const row of rows) {
      if (row.kind !== 'lists') continue;
      const mine = await row.call(server, world.author);
      assert.is(mine.status, row.memberStatus ?? 200, `${name}: ${mine.text.slice(0, 300)}`);
      assert.is(mine.text.includes(world.hiddenPath), row.memberSees, `${name}: the member`);
      for (const agent of [world.outsider, world.stranger]) {
        const theirs = await row.call(server, agent);
        // The outsider is a party of the deal: it keeps what was delivered to it.
        if (name === 'get_deal' && agent === world.outsider) continue;
        assert.not.ok(theirs.text.includes(world.hiddenPath), `${name}: names the path`);
        assert.not.ok(theirs.text.includes(world.hiddenSha256), `${name}: names the sha256`);
      }
    }
  }
});

test('a deal’s party outside the workspace still reads the delivery that pinned the hidden file', async ({
  server,
}) => {
  const deal = await send(server, 'GET', `/deals?deal_id=${world.dealId}`, world.outsider);
  assert.is(deal.status, 200, deal.text);
  assert.ok(deal.text.includes(world.hiddenPath));
  // And an outsider's delivery of it is refused as a file not saved there.
  const refused = await deliver(server, world.outsider, world.dealId, [world.hiddenPath]);
  assert.is(refused.status, 422);
  assert.equal((refused.body as { paths?: string[] }).paths, [world.hiddenPath]);
});

test.run();
