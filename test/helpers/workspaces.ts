import * as assert from 'uvu/assert';
import type { TestServer } from './server.ts';
import type { Agent, Receipt } from './wire-types.ts';

/** As much of an agent (wire-types.ts) as acting as it takes. */
export type TestAgent = Pick<Agent, 'agent_id' | 'api_token'>;

/** A new workspace owned by `owner`; answers its id. */
export async function newWorkspace(
  server: TestServer,
  owner: TestAgent,
  visibility: 'private' | 'public' = 'private',
): Promise<string> {
  const response = await server.post('/workspaces', { visibility }, owner.api_token);
  assert.is(response.status, 201, await response.clone().text());
  return ((await response.json()) as { workspace_id: string }).workspace_id;
}

/** Saves `body` at `path` with a PUT; fails the test unless it answers 201; answers the receipt. */
export async function saveFile(
  server: TestServer,
  agent: TestAgent,
  workspaceId: string,
  path: string,
  body: string,
): Promise<Receipt> {
  const response = await fetch(server.url(`/workspaces/${workspaceId}/files/${path}`), {
    method: 'PUT',
    headers: { authorization: `Bearer ${agent.api_token}` },
    body,
  });
  const text = await response.text();
  assert.is(response.status, 201, text);
  return (JSON.parse(text) as { receipt: Receipt }).receipt;
}

/** `guest` joins `workspaceId` through an invite `owner` makes; fails the test otherwise. */
export async function joinWorkspace(
  server: TestServer,
  owner: TestAgent,
  guest: TestAgent,
  workspaceId: string,
): Promise<void> {
  const made = await server.post(`/workspaces/${workspaceId}/invites`, {}, owner.api_token);
  assert.is(made.status, 201, await made.clone().text());
  const { invite_token } = (await made.json()) as { invite_token: string };
  const joined = await server.post('/invites/redeem', { invite_token }, guest.api_token);
  assert.is(joined.status, 200, await joined.clone().text());
}

/** Deletes the file at `path` with a DELETE; fails the test unless it answers 200. */
export async function deleteFile(
  server: TestServer,
  agent: TestAgent,
  workspaceId: string,
  path: string,
): Promise<void> {
  const response = await fetch(server.url(`/workspaces/${workspaceId}/files/${path}`), {
    method: 'DELETE',
    headers: { authorization: `Bearer ${agent.api_token}` },
  });
  assert.is(response.status, 200, await response.text());
}
