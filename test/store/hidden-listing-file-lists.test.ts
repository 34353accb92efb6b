import { ContainerClient } from '@azure/storage-blob';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { OPERATIONS } from '../../protocol/operations.ts';
import { callTool } from '../helpers/clients.ts';
import { callJson as call } from '../helpers/http.ts';
import { mcpClient } from '../helpers/server-suite.ts';
import { storageLink } from '../helpers/storage-links.ts';
import { HIDDEN_REPAIR, hideListing, postedListing, storeSuite } from '../helpers/store.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { saveFile } from '../helpers/workspaces.ts';

/**
 * Hidden stays hidden in every listing of files (issue 32 §3, after 02efcea): a listing the
 * operator hid answers 404 to everyone outside its workspace (read_file), and no listing of the
 * workspace's files names it to them either: list_files over HTTP and MCP, and List Blobs on a
 * storage link (which lists through list_files). Its workspace's members still see it listed.
 * The operations that list a workspace's files are read from the operation table. On the driver
 * DATABASE_URL names (PGlite without it).
 */
const test = storeSuite('a hidden listing is listed to no one outside its workspace');

/** Every read whose answer lists files by path (an array `files` of objects with `path`). */
function fileListings(): string[] {
  return Object.values(OPERATIONS)
    .filter((op) => {
      if (!('readOnly' in op && op.readOnly)) return false;
      const output = op.output as z.ZodType | undefined;
      if (!(output instanceof z.ZodObject)) return false;
      const files = output.shape.files;
      return (
        files instanceof z.ZodArray &&
        files.element instanceof z.ZodObject &&
        'path' in files.element.shape
      );
    })
    .map((op) => op.name)
    .sort();
}

interface World {
  author: Agent;
  outsider: Agent;
  workspaceId: string;
  hiddenPath: string;
  shownPath: string;
  listingId: string;
}

let world: World;

test.before(async ({ server, operatorToken }) => {
  const author = await server.signUp();
  const outsider = await server.signUp();
  const {
    workspace_id: workspaceId,
    path: hiddenPath,
    listing_id,
  } = await postedListing(server, author, HIDDEN_REPAIR);
  const shownPath = 'notes/shown.md';
  await saveFile(server, author, workspaceId, shownPath, '---\ncity: Berlin\n---\nShown.\n');
  await hideListing(server, operatorToken, listing_id);
  world = { author, outsider, workspaceId, hiddenPath, shownPath, listingId: listing_id };
});

/** The paths each door lists to `agent`, by door. */
async function listedBy(context: Parameters<typeof mcpClient>[0], agent: Agent) {
  const { server } = context;
  const { workspaceId } = world;
  const http = await call<{ files: { path: string }[] }>(
    server,
    'GET',
    `/workspaces/${workspaceId}/files`,
    agent.api_token,
  );
  assert.is(http.status, 200, JSON.stringify(http.body));
  const mcp = await callTool(await mcpClient(context, agent.api_token), 'list_files', {
    workspace_id: workspaceId,
  });
  assert.not.ok(mcp.isError, JSON.stringify(mcp.content));
  const link = await storageLink(server, agent, workspaceId, 'read');
  const container = new ContainerClient(`${link.container_url}?${link.sas_token}`, undefined, {
    retryOptions: { maxTries: 1 },
  });
  const blobs: string[] = [];
  for await (const blob of container.listBlobsFlat()) blobs.push(blob.name);
  return {
    'list_files over HTTP': http.body.files.map((f) => f.path).sort(),
    'list_files over MCP': (mcp.structuredContent as { files: { path: string }[] }).files
      .map((f) => f.path)
      .sort(),
    'List Blobs on a storage link': blobs.sort(),
  };
}

test('of the reads in the operation table, list_files alone lists files (the storage link lists through it): each is tested here', () => {
  assert.equal(fileListings(), ['list_files']);
});

test('outside the workspace, no door lists the hidden listing’s file, and every other file is listed', async (context) => {
  const listed = await listedBy(context, world.outsider);
  for (const [door, paths] of Object.entries(listed)) {
    assert.equal(paths, [world.shownPath], door);
  }
  // As read_file answers it: 404, the same as a file that never was.
  const read = await call(
    context.server,
    'GET',
    `/workspaces/${world.workspaceId}/files/${world.hiddenPath}`,
    world.outsider.api_token,
  );
  assert.is(read.status, 404);
});

test('the workspace’s member (its author) sees the hidden listing’s file listed by every door', async (context) => {
  const listed = await listedBy(context, world.author);
  for (const [door, paths] of Object.entries(listed)) {
    assert.equal(paths, [world.hiddenPath, world.shownPath].sort(), door);
  }
});

test('shown again, the listing’s file is listed to everyone', async (context) => {
  const shown = await call(
    context.server,
    'POST',
    `/operator/listings/${world.listingId}/show`,
    context.operatorToken,
    { reason: 'Issue 32 test.' },
  );
  assert.is(shown.status, 200, JSON.stringify(shown.body));
  const listed = await listedBy(context, world.outsider);
  for (const [door, paths] of Object.entries(listed)) {
    assert.equal(paths, [world.hiddenPath, world.shownPath].sort(), door);
  }
});

test.run();
