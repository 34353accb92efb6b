import * as assert from 'uvu/assert';
import { LOOKUP_BATCH } from '../../actors/agents/leaked-tokens.ts';
import { newToken } from '../../actors/kernel/tokens.ts';
import { callTool } from '../helpers/clients.ts';
import { callJson } from '../helpers/http.ts';
import { mcpClient, serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import {
  blockId,
  blockListXml,
  putBlob,
  putBlock,
  putBlockList,
  storageLink,
} from '../helpers/storage-links.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * Leaked tokens: a live token of the service saved where others read it (a public file by any
 * door, a listing, a message, feedback) is revoked by the time the save answers; the save keeps
 * the text as written, and the token's owner reads `token.revoked` saying where.
 */

const test = serverSuite<{ operatorToken: string }>('leaked tokens are revoked where saved', () => {
  const operatorToken = newToken();
  return { extra: { operatorToken }, config: { operatorToken } };
});

/** An agent with a second token, the one about to leak (the first reads the feed after). */
interface Leaky {
  agent: Agent;
  token: string;
  tokenId: string;
}

async function leaky(server: TestServer): Promise<Leaky> {
  const agent = (await server.signUp()) as Agent;
  const made = await callJson<{ api_token: string; token_id: string }>(
    server,
    'POST',
    '/whoami/tokens',
    agent.api_token,
    { name: 'deploy key' },
  );
  assert.is(made.status, 201, JSON.stringify(made.body));
  return { agent, token: made.body.api_token, tokenId: made.body.token_id };
}

/** Fails unless the token is refused as revoked. */
async function assertRevoked(server: TestServer, token: string, where: string) {
  const answer = await callJson<{ code?: string; reason?: string }>(
    server,
    'GET',
    '/whoami',
    token,
  );
  assert.is(answer.status, 401, `${where}: ${JSON.stringify(answer.body)}`);
  assert.is(answer.body.code, 'unauthorized', where);
  assert.is(answer.body.reason, 'revoked', where);
}

async function assertAlive(server: TestServer, token: string, where: string) {
  const answer = await callJson(server, 'GET', '/whoami', token);
  assert.is(answer.status, 200, `${where}: ${JSON.stringify(answer.body)}`);
}

interface Change {
  type: string;
  data: Record<string, unknown>;
}

/** The `token.revoked` changes of the agent's feed, read with `token`. */
async function revokedChanges(server: TestServer, token: string): Promise<Change[]> {
  const page = await callJson<{ changes: Change[] }>(
    server,
    'GET',
    '/changes?after=c0&limit=500',
    token,
  );
  assert.is(page.status, 200, JSON.stringify(page.body));
  return page.body.changes.filter((change) => change.type === 'token.revoked');
}

/** Fails unless the owner's feed says the token was revoked as leaked, found where `foundIn` says. */
async function assertToldOwner(server: TestServer, leak: Leaky, foundIn: Record<string, unknown>) {
  const changes = await revokedChanges(server, leak.agent.api_token);
  assert.equal(
    changes.map((change) => change.data),
    [{ token_id: leak.tokenId, name: 'deploy key', reason: 'leaked', found_in: foundIn }],
  );
}

const readText = async (server: TestServer, agent: Agent, workspaceId: string, path: string) => {
  const response = await server.get(`/workspaces/${workspaceId}/files/${path}`, agent.api_token);
  assert.is(response.status, 200);
  return response.text();
};

test('a live token saved by PUT to a public file is revoked before the save answers; the file keeps it', async ({
  server,
}) => {
  const leak = await leaky(server);
  const author = (await server.signUp()) as Agent;
  const open = await newWorkspace(server, author, 'public');
  const text = `config:\n  token: ${leak.token}\n`;
  await saveFile(server, author, open, 'notes/config.yaml', text);
  await assertRevoked(server, leak.token, 'right after the PUT');
  assert.is(await readText(server, author, open, 'notes/config.yaml'), text);
  await assertToldOwner(server, leak, {
    kind: 'file',
    workspace_id: open,
    path: 'notes/config.yaml',
  });
  await assertAlive(server, leak.agent.api_token, "the owner's other token");
});

test('checksum-valid decoys before a live token do not hide it: every candidate is looked up', async ({
  server,
}) => {
  const leak = await leaky(server);
  const author = (await server.signUp()) as Agent;
  const open = await newWorkspace(server, author, 'public');
  // A lookup batch of decoys, the live token inside the second batch (looked up while the
  // bytes stream), and more decoys after it than the old cap of 100 distinct tokens.
  const decoys = (n: number) => Array.from({ length: n }, () => newToken()).join('\n');
  const text = `${decoys(LOOKUP_BATCH + 5)}\n${leak.token}\n${decoys(LOOKUP_BATCH + 50)}\n`;
  await saveFile(server, author, open, 'decoys.txt', text);
  await assertRevoked(server, leak.token, 'behind the decoys');
  await assertToldOwner(server, leak, { kind: 'file', workspace_id: open, path: 'decoys.txt' });
});

test('a live token written by MCP write_file to a public workspace is revoked', async (context) => {
  const { server } = context;
  const leak = await leaky(server);
  const author = (await server.signUp()) as Agent;
  const open = await newWorkspace(server, author, 'public');
  const client = await mcpClient(context, author.api_token);
  const written = await callTool(client, 'write_file', {
    workspace_id: open,
    path: 'leak.txt',
    content: `export API_TOKEN=${leak.token}`,
  });
  assert.not.ok(written.isError, JSON.stringify(written.content));
  await assertRevoked(server, leak.token, 'right after write_file');
  await assertToldOwner(server, leak, { kind: 'file', workspace_id: open, path: 'leak.txt' });
});

test('a live token uploaded through a storage link (Put Blob with a SAS URL) is revoked', async ({
  server,
}) => {
  const leak = await leaky(server);
  const author = (await server.signUp()) as Agent;
  const open = await newWorkspace(server, author, 'public');
  const link = await storageLink(server, author, open, 'readwrite', 'dump.bin');
  // Bytes of a binary file around it: a token is ASCII wherever it is.
  const body = Buffer.concat([Buffer.from([0, 255, 7]), Buffer.from(leak.token), Buffer.from([0])]);
  const { response } = await putBlob(link.file_url as string, body);
  assert.is(response.status, 201, await response.text());
  await assertRevoked(server, leak.token, 'right after Put Blob');
  await assertToldOwner(server, leak, { kind: 'file', workspace_id: open, path: 'dump.bin' });
});

test('a token split across two blocks of a Put Block List is found when the list commits', async ({
  server,
}) => {
  const leak = await leaky(server);
  const author = (await server.signUp()) as Agent;
  const open = await newWorkspace(server, author, 'public');
  const url = (await storageLink(server, author, open, 'readwrite', 'big.log')).file_url as string;
  const half = 23;
  const first = Buffer.concat([
    Buffer.alloc(70_000, 'x'),
    Buffer.from(`\n${leak.token.slice(0, half)}`),
  ]);
  const second = Buffer.concat([
    Buffer.from(`${leak.token.slice(half)}\n`),
    Buffer.alloc(70_000, 'y'),
  ]);
  for (const [n, bytes] of [first, second].entries()) {
    const staged = await putBlock(url, blockId(n), bytes);
    assert.is(staged.response.status, 201, await staged.response.text());
  }
  await assertAlive(server, leak.token, 'staged blocks are no save');
  const committed = await putBlockList(url, blockListXml([blockId(0), blockId(1)]));
  assert.is(committed.response.status, 201, await committed.response.text());
  await assertRevoked(server, leak.token, 'right after Put Block List');
  await assertToldOwner(server, leak, { kind: 'file', workspace_id: open, path: 'big.log' });
});

test('a token across the chunks of a large streamed PUT is found', async ({ server }) => {
  const leak = await leaky(server);
  const author = (await server.signUp()) as Agent;
  const open = await newWorkspace(server, author, 'public');
  // 4 MiB in 64 KiB pieces (the size socket reads come in), the token across each seam of two
  // at a different split, and in no piece whole: found only if the scan reads across seams.
  const piece = 64 * 1024;
  const pieces: Buffer[] = [];
  for (let n = 0; n < 64; n++) {
    const bytes = Buffer.alloc(piece, '.');
    if (n % 2 === 0) bytes.write(leak.token.slice(0, 1 + (n % 50)), piece - 1 - (n % 50), 'latin1');
    else bytes.write(leak.token.slice(1 + ((n - 1) % 50)), 0, 'latin1');
    pieces.push(bytes);
  }
  const response = await fetch(server.url(`/workspaces/${open}/files/stream.bin`), {
    method: 'PUT',
    headers: { authorization: `Bearer ${author.api_token}` },
    body: new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = pieces.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    }),
    duplex: 'half',
  } as RequestInit);
  assert.is(response.status, 201, await response.text());
  await assertRevoked(server, leak.token, 'right after the streamed PUT');
  await assertToldOwner(server, leak, { kind: 'file', workspace_id: open, path: 'stream.bin' });
});

test('post_listing with a live token in it is revoked once, reported as the listing', async ({
  server,
}) => {
  const leak = await leaky(server);
  const author = (await server.signUp()) as Agent;
  const posted = await callJson<{ listing_id: string; workspace_id: string; path: string }>(
    server,
    'POST',
    '/listings',
    author.api_token,
    {
      kind: 'can',
      name: 'Deploys',
      description: `I deploy with ${leak.token} (oops)`,
      can: 'deploys',
    },
  );
  assert.is(posted.status, 201, JSON.stringify(posted.body));
  await assertRevoked(server, leak.token, 'right after post_listing');
  await assertToldOwner(server, leak, {
    kind: 'listing',
    listing_id: posted.body.listing_id,
    workspace_id: posted.body.workspace_id,
  });
  const text = await readText(server, author, posted.body.workspace_id, posted.body.path);
  assert.ok(text.includes(`I deploy with ${leak.token} (oops)`), 'the listing as written');
});

test('send_message with a live token in it is revoked, even in a private workspace', async ({
  server,
}) => {
  const leak = await leaky(server);
  const author = (await server.signUp()) as Agent;
  const room = await newWorkspace(server, author, 'private');
  const text = `here: ${leak.token}`;
  const sent = await callJson<{ message_id: string; text: string }>(
    server,
    'POST',
    `/workspaces/${room}/messages`,
    author.api_token,
    { text },
  );
  assert.is(sent.status, 201, JSON.stringify(sent.body));
  assert.is(sent.body.text, text);
  await assertRevoked(server, leak.token, 'right after send_message');
  await assertToldOwner(server, leak, {
    kind: 'message',
    message_id: sent.body.message_id,
    workspace_id: room,
  });
});

test('leave_feedback with a live token in it is revoked, sent with a token or without', async ({
  server,
}) => {
  for (const sender of ['an agent', 'nobody']) {
    const leak = await leaky(server);
    const token = sender === 'an agent' ? leak.agent.api_token : null;
    const sent = await callJson<{ feedback_id: string }>(server, 'POST', '/feedback', token, {
      message: `my token ${leak.token} stopped working`,
      category: 'bug',
    });
    assert.is(sent.status, 202, JSON.stringify(sent.body));
    await assertRevoked(server, leak.token, `right after leave_feedback by ${sender}`);
    await assertToldOwner(server, leak, { kind: 'feedback', feedback_id: sent.body.feedback_id });
  }
});

test("the operator's OPERATOR_TOKEN is revoked too when it leaks", async ({
  server,
  operatorToken,
}) => {
  const spare = await callJson<{ api_token: string }>(
    server,
    'POST',
    '/whoami/tokens',
    operatorToken,
    { name: 'spare' },
  );
  assert.is(spare.status, 201, JSON.stringify(spare.body));
  const author = (await server.signUp()) as Agent;
  const open = await newWorkspace(server, author, 'public');
  await saveFile(server, author, open, 'ops.md', `OPERATOR_TOKEN=${operatorToken}\n`);
  await assertRevoked(server, operatorToken, 'the operator token');
  const changes = await revokedChanges(server, spare.body.api_token);
  assert.equal(
    changes.map((change) => [change.data.name, change.data.found_in]),
    [['OPERATOR_TOKEN', { kind: 'file', workspace_id: open, path: 'ops.md' }]],
  );
});

test('nothing is revoked for a private file, a revoked or unknown token, or a look-alike', async ({
  server,
}) => {
  const leak = await leaky(server);
  const author = (await server.signUp()) as Agent;
  const closed = await newWorkspace(server, author, 'private');
  const open = await newWorkspace(server, author, 'public');
  await saveFile(server, author, closed, 'secret.env', `TOKEN=${leak.token}\n`);
  await assertAlive(server, leak.token, 'a private file');

  // A look-alike: the token with its last character changed (the checksum fails), and the
  // token inside a longer word (a base62 character on either side).
  const last = leak.token.at(-1) === 'a' ? 'b' : 'a';
  const lookAlikes = [`${leak.token.slice(0, -1)}${last}`, `x${leak.token}`, `${leak.token}0`].join(
    ' ',
  );
  await saveFile(server, author, open, 'look-alikes.txt', lookAlikes);
  await assertAlive(server, leak.token, 'look-alikes');

  // A well-formed token nobody holds, and one already revoked by its owner.
  const gone = await leaky(server);
  const revoked = await callJson(
    server,
    'DELETE',
    `/whoami/tokens/${gone.tokenId}`,
    gone.agent.api_token,
  );
  assert.is(revoked.status, 200, JSON.stringify(revoked.body));
  await saveFile(server, author, open, 'dead.txt', `${newToken()}\n${gone.token}\n`);
  assert.equal(
    await revokedChanges(server, leak.agent.api_token),
    [],
    'no change for the live one',
  );
  assert.equal(await revokedChanges(server, gone.agent.api_token), [], 'none for the revoked one');
  await assertAlive(server, leak.token, 'after all of it');
});

test.run();
