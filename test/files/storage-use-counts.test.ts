import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import * as assert from 'uvu/assert';
import { callJson } from '../helpers/http.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import {
  blockId,
  blockListXml,
  fileLink,
  putBlock,
  putBlockList,
} from '../helpers/storage-links.ts';
import { joinWorkspace, newWorkspace, saveFile, type TestAgent } from '../helpers/workspaces.ts';

/**
 * whoami answers its storage figures from memory (services.counts) until a write changes them.
 * Writes that change an agent's storage use without a change in that agent's feed (bytes given
 * back to a saver who left the workspace, a staged block, an upload's reservation) tell the
 * memory so: whoami shows them in the very next call. Each test first warms the memory.
 */

interface Storage {
  used_bytes: number;
  current_files_bytes: number;
  older_versions_bytes: number;
  staged_blocks_bytes: number;
  uploads_in_progress_bytes: number;
}

async function storageOf(server: TestServer, agent: TestAgent): Promise<Storage> {
  const me = await callJson<{ storage: Storage }>(server, 'GET', '/whoami', agent.api_token);
  assert.is(me.status, 200, JSON.stringify(me.body));
  return me.body.storage;
}

/** whoami until `wanted` holds (an upload's reservation is made as its body starts). */
async function storageOnceItShows(
  server: TestServer,
  agent: TestAgent,
  wanted: (storage: Storage) => boolean,
  what: string,
): Promise<Storage> {
  const deadline = Date.now() + 10_000;
  let last = await storageOf(server, agent);
  while (!wanted(last)) {
    if (Date.now() > deadline) assert.unreachable(`${what}; whoami shows ${JSON.stringify(last)}`);
    last = await storageOf(server, agent);
  }
  return last;
}

async function leave(server: TestServer, agent: TestAgent, workspaceId: string): Promise<void> {
  const left = await callJson(server, 'POST', `/workspaces/${workspaceId}/leave`, agent.api_token);
  assert.is(left.status, 200, JSON.stringify(left.body));
}

/** A PUT whose body the test sends piece by piece; `answer` settles when the server answers. */
function startUpload(url: string, headers: Record<string, string>, length: number) {
  let client!: ClientRequest;
  const answer = new Promise<IncomingMessage>((resolve, reject) => {
    client = httpRequest(url, {
      method: 'PUT',
      headers: {
        ...headers,
        'content-type': 'application/octet-stream',
        'content-length': String(length),
      },
    });
    client.on('response', resolve);
    client.on('error', reject);
  });
  return { client, answer };
}

/** A PUT of a file through the REST API, its body sent piece by piece. */
const startPut = (server: TestServer, agent: TestAgent, path: string, length: number) =>
  startUpload(server.url(path), { authorization: `Bearer ${agent.api_token}` }, length);

const test = serverSuite('whoami storage figures right after each write that changes them');

test('a save and a delete by another member give back the bytes of a saver who left, in whoami at once', async ({
  server,
}) => {
  const owner = await server.signUp();
  const saver = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  await joinWorkspace(server, owner, saver, workspaceId);
  await saveFile(server, saver, workspaceId, 'theirs.txt', 'ten bytes!');
  await saveFile(server, saver, workspaceId, 'gone.txt', 'six b!');
  const saved = await storageOf(server, saver);
  assert.is(saved.current_files_bytes, 16);
  assert.is(saved.used_bytes, 16);
  await leave(server, saver, workspaceId);
  assert.equal(await storageOf(server, saver), saved, 'leaving moves no bytes');

  // The owner replaces the saver's file: its bytes (not indexed) are let go, given back.
  await saveFile(server, owner, workspaceId, 'theirs.txt', 'replaced');
  const replaced = await storageOf(server, saver);
  assert.is(replaced.current_files_bytes, 6);
  assert.is(replaced.used_bytes, 6);
  assert.is((await storageOf(server, owner)).current_files_bytes, 8);

  const deleted = await callJson(
    server,
    'DELETE',
    `/workspaces/${workspaceId}/files/gone.txt`,
    owner.api_token,
  );
  assert.is(deleted.status, 200, JSON.stringify(deleted.body));
  const after = await storageOf(server, saver);
  assert.is(after.current_files_bytes, 0);
  assert.is(after.used_bytes, 0);
});

test('a staged block and the block list that commits it show in whoami at once', async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  assert.is((await storageOf(server, agent)).staged_blocks_bytes, 0);
  const link = await fileLink(server, agent, workspaceId, 'blocks.bin');
  const length = 3000;
  // The block streams in: whoami, asked meanwhile, holds its reservation; then it is staged.
  const staging = startUpload(
    `${link}&comp=block&blockid=${encodeURIComponent(blockId(1))}`,
    {},
    length,
  );
  staging.client.write(new Uint8Array(1000));
  await storageOnceItShows(
    server,
    agent,
    (storage) => storage.uploads_in_progress_bytes === length,
    'the block reserves its length while it streams',
  );
  staging.client.end(new Uint8Array(length - 1000));
  const staged = await staging.answer;
  staged.resume();
  assert.is(staged.statusCode, 201);
  const afterBlock = await storageOf(server, agent);
  assert.is(afterBlock.uploads_in_progress_bytes, 0);
  assert.is(afterBlock.staged_blocks_bytes, length);
  assert.is(afterBlock.used_bytes, length);
  assert.is(afterBlock.current_files_bytes, 0);

  // A second block, sent whole.
  const second = await putBlock(link, blockId(2), new Uint8Array(500));
  assert.is(second.response.status, 201);
  assert.is((await storageOf(server, agent)).staged_blocks_bytes, length + 500);

  const committed = await putBlockList(link, blockListXml([blockId(1), blockId(2)]));
  assert.is(committed.response.status, 201);
  const afterList = await storageOf(server, agent);
  assert.is(afterList.staged_blocks_bytes, 0);
  assert.is(afterList.current_files_bytes, length + 500);
  assert.is(afterList.used_bytes, length + 500);
});

test("an upload's reservation shows in whoami while its body streams, and leaves when it is saved or dropped", async ({
  server,
}) => {
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const length = 64 * 1024;
  assert.is((await storageOf(server, agent)).uploads_in_progress_bytes, 0);

  const saved = startPut(server, agent, `/workspaces/${workspaceId}/files/big.bin`, length);
  saved.client.write(new Uint8Array(1024));
  const streaming = await storageOnceItShows(
    server,
    agent,
    (storage) => storage.uploads_in_progress_bytes === length,
    'the declared length is reserved before the body is read',
  );
  assert.is(streaming.used_bytes, length);
  saved.client.end(new Uint8Array(length - 1024));
  const answer = await saved.answer;
  answer.resume();
  assert.is(answer.statusCode, 201);
  const afterSave = await storageOf(server, agent);
  assert.is(afterSave.uploads_in_progress_bytes, 0);
  assert.is(afterSave.current_files_bytes, length);
  assert.is(afterSave.used_bytes, length);

  // An upload the client gives up: its room is given back.
  const dropped = startPut(server, agent, `/workspaces/${workspaceId}/files/dropped.bin`, length);
  dropped.answer.catch(() => undefined);
  dropped.client.write(new Uint8Array(1024));
  await storageOnceItShows(
    server,
    agent,
    (storage) => storage.uploads_in_progress_bytes === length,
    'the second upload reserves its length',
  );
  dropped.client.destroy();
  const afterDrop = await storageOnceItShows(
    server,
    agent,
    (storage) => storage.uploads_in_progress_bytes === 0,
    'a dropped upload gives its room back',
  );
  assert.is(afterDrop.used_bytes, length);
});

test.run();
