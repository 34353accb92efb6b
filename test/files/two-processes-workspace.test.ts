import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BlockBlobClient } from '@azure/storage-blob';
import * as assert from 'uvu/assert';
import { canonicalJson } from '../../protocol/jcs.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * Two servers on one PostgreSQL serve one workspace: each holds its own WorkspaceActor, and
 * only the version column and the notices between processes keep them from writing over each
 * other. Invites redeemed on both at once: every membership is right; one token raced from
 * both: exactly one agent joins.
 */
const test = postgresSuite<{ a: TestServer; b: TestServer }>(
  'two servers serve one workspace at once',
);

// Two processes of one deployment share their blob store too (a volume, or S3).
const dataDir = mkdtempSync(join(tmpdir(), 'agent-service-shared-'));

test.before(async (context) => {
  const databaseUrl = await freshDatabaseUrl();
  context.a = await startTestServer({ databaseUrl, dataDir });
  context.b = await startTestServer({ databaseUrl, dataDir });
});
test.after(async ({ a, b }) => {
  await a.close();
  await b.close();
  rmSync(dataDir, { recursive: true, force: true });
});

type Agent = { agent_id: string; api_token: string };

async function post(server: TestServer, path: string, token: string, body: unknown) {
  const response = await server.post(path, body, token);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function membersOn(server: TestServer, workspaceId: string, token: string) {
  const shown = (await (await server.get(`/workspaces/${workspaceId}`, token)).json()) as {
    members: { agent_id: string; role: string }[];
  };
  return shown.members.map((m) => m.agent_id).sort();
}

test('invites redeemed on both servers at once all join, and both servers see every member', async ({
  a,
  b,
}) => {
  const owner = await a.signUp();
  const { workspace_id } = (await post(a, '/workspaces', owner.api_token, {})).body as {
    workspace_id: string;
  };
  // Both servers load the workspace before the race, so each holds a copy.
  await a.get(`/workspaces/${workspace_id}`, owner.api_token);
  await b.get(`/workspaces/${workspace_id}`, owner.api_token);
  const guests: Agent[] = await Promise.all(Array.from({ length: 8 }, () => a.signUp()));
  const tokens: string[] = [];
  while (tokens.length < guests.length) {
    const made = await post(b, `/workspaces/${workspace_id}/invites`, owner.api_token, {});
    tokens.push(made.body.invite_token as string);
  }
  const answers = await Promise.all(
    guests.map((guest, i) =>
      post(i % 2 === 0 ? a : b, '/invites/redeem', guest.api_token, {
        invite_token: tokens[i],
      }),
    ),
  );
  assert.equal(
    answers.map((answer) => answer.status),
    Array(8).fill(200),
  );
  const everyone = [owner, ...guests].map((agent) => agent.agent_id).sort();
  assert.equal(await membersOn(a, workspace_id, owner.api_token), everyone);
  assert.equal(await membersOn(b, workspace_id, owner.api_token), everyone);
  const [row] = await a.services.driver.query<{ version: number }>(
    'select version from workspaces where workspace_id = $1',
    [workspace_id],
  );
  assert.is(row?.version, 8, 'one version per join: no join wrote over another');
});

test('one token raced from both servers admits exactly one agent', async ({ a, b }) => {
  const owner = await a.signUp();
  const { workspace_id } = (await post(a, '/workspaces', owner.api_token, {})).body as {
    workspace_id: string;
  };
  await b.get(`/workspaces/${workspace_id}`, owner.api_token);
  const token = (await post(a, `/workspaces/${workspace_id}/invites`, owner.api_token, {})).body
    .invite_token as string;
  const rivals = await Promise.all([a.signUp(), a.signUp(), b.signUp(), b.signUp()]);
  const answers = await Promise.all(
    rivals.map((rival, i) =>
      post(i % 2 === 0 ? a : b, '/invites/redeem', rival.api_token, { invite_token: token }),
    ),
  );
  assert.equal(answers.map((answer) => answer.status).sort(), [200, 409, 409, 409]);
  assert.is((await membersOn(b, workspace_id, owner.api_token)).length, 2);
});

test('an agent that joined through one server can read the workspace through the other at once', async ({
  a,
  b,
}) => {
  const owner = await a.signUp();
  const guest = await a.signUp();
  const { workspace_id } = (await post(a, '/workspaces', owner.api_token, {})).body as {
    workspace_id: string;
  };
  // b holds a copy from before the join; the join's notice may not have reached it yet.
  await b.get(`/workspaces/${workspace_id}`, owner.api_token);
  const token = (await post(a, `/workspaces/${workspace_id}/invites`, owner.api_token, {})).body
    .invite_token as string;
  assert.is(
    (await post(a, '/invites/redeem', guest.api_token, { invite_token: token })).status,
    200,
  );
  const read = await b.get(`/workspaces/${workspace_id}`, guest.api_token);
  assert.is(read.status, 200, 'a stale copy is checked against the database before refusing');
});

test('saves of one path through both servers at once: every version once, receipts in one chain', async ({
  a,
  b,
}) => {
  const owner = await a.signUp();
  const { workspace_id } = (await post(a, '/workspaces', owner.api_token, {})).body as {
    workspace_id: string;
  };
  await b.get(`/workspaces/${workspace_id}`, owner.api_token);
  const saves = await Promise.all(
    Array.from({ length: 10 }, async (_, i) => {
      const server = i % 2 === 0 ? a : b;
      const response = await fetch(server.url(`/workspaces/${workspace_id}/files/shared.txt`), {
        method: 'PUT',
        headers: { authorization: `Bearer ${owner.api_token}` },
        body: `save ${i}`,
      });
      return response.status;
    }),
  );
  assert.equal(saves, Array(10).fill(201));
  const listed = (await (
    await b.get(`/workspaces/${workspace_id}/receipts?limit=500`, owner.api_token)
  ).json()) as { receipts: Record<string, unknown>[] };
  const receipts = listed.receipts.reverse();
  assert.equal(
    receipts.map((receipt) => receipt.version),
    Array.from({ length: 10 }, (_, i) => i + 1),
    'versions 1..10, each once',
  );
  let previous: Record<string, unknown> | null = null;
  for (const receipt of receipts) {
    assert.is(
      receipt.prev_hash,
      previous ? createHash('sha256').update(canonicalJson(previous)).digest('hex') : null,
      'each receipt follows the one before: the chain never forks',
    );
    previous = receipt;
  }
});

test('a storage link made by one server works on the other, blocks staged through both join into one file', async ({
  a,
  b,
}) => {
  const owner = await a.signUp();
  const { workspace_id } = (await post(a, '/workspaces', owner.api_token, {})).body as {
    workspace_id: string;
  };
  const made = await post(a, `/workspaces/${workspace_id}/sas`, owner.api_token, {
    access: 'readwrite',
    path: 'joined.bin',
  });
  const onA = new URL(made.body.file_url as string);
  const onB = new URL(`${b.baseUrl}${onA.pathname}${onA.search}`);
  const blockIds = ['AAAA', 'AAAB', 'AAAC', 'AAAD'];
  const parts = blockIds.map((_, i) => Buffer.alloc(1000 + i, 65 + i));
  // Every block through alternate servers, and the list through B: one file, one receipt.
  await Promise.all(
    blockIds.map((id, i) =>
      new BlockBlobClient((i % 2 === 0 ? onA : onB).href, undefined, {
        retryOptions: { maxTries: 1 },
      }).stageBlock(id, parts[i] as Buffer, (parts[i] as Buffer).length),
    ),
  );
  await new BlockBlobClient(onB.href, undefined, { retryOptions: { maxTries: 1 } }).commitBlockList(
    blockIds,
  );
  const joined = Buffer.concat(parts);
  const read = await fetch(a.url(`/workspaces/${workspace_id}/files/joined.bin`), {
    headers: { authorization: `Bearer ${owner.api_token}` },
  });
  assert.is(read.status, 200);
  assert.ok(Buffer.from(await read.arrayBuffer()).equals(joined));
  const receipts = (await (
    await b.get(`/workspaces/${workspace_id}/receipts?path=joined.bin`, owner.api_token)
  ).json()) as { receipts: { size: number; agent_id: string }[] };
  assert.equal(
    receipts.receipts.map((receipt) => [receipt.size, receipt.agent_id]),
    [[joined.length, owner.agent_id]],
  );
});

test.run();
