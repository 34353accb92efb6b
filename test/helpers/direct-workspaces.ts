import * as assert from 'uvu/assert';
import { bytesBody } from '../../protocol/binding.ts';
import { ServiceError, toProblem, type Problem } from '../../protocol/errors.ts';
import type { DirectAgent, DirectDoor } from './direct.ts';

/**
 * Workspaces and invites through the direct door (./direct.ts), as the rule suites call them;
 * ./workspaces.ts does the same through HTTP for the suites about the doors.
 */

/** A new workspace owned by `owner`; answers its id. */
export async function workspaceOf(
  door: DirectDoor,
  owner: Pick<DirectAgent, 'api_token'>,
  visibility: 'private' | 'public' = 'private',
): Promise<string> {
  return (await door.call('create_workspace', { visibility }, owner.api_token)).workspace_id;
}

/** `guest` joins `workspaceId` through an invite `by` makes; fails the test otherwise. */
export async function joinedBy(
  door: DirectDoor,
  by: DirectAgent,
  guest: DirectAgent,
  workspaceId: string,
): Promise<void> {
  const { invite_token } = await door.call(
    'create_invite',
    { workspace_id: workspaceId },
    by.api_token,
  );
  const joined = await door.call('redeem_invite', { invite_token }, guest.api_token);
  assert.equal(joined, { workspace_id: workspaceId, role: 'member' });
}

/**
 * A refusal as every door shows it (the problem object, protocol/errors.ts): two refusals that
 * must not be told apart compare equal here.
 */
export function problemOf(refused: ServiceError): Problem {
  return toProblem(refused, '');
}

/** Saves `text` at `path` as `agent`, with the bytes as the body a PUT carries. */
export async function writeText(
  door: DirectDoor,
  agent: DirectAgent,
  workspaceId: string,
  path: string,
  text: string,
) {
  return door.call('write_file', { workspace_id: workspaceId, path }, agent.api_token, {
    body: bytesBody(new TextEncoder().encode(text)),
  });
}

/** The text at `path`, read as `agent`. */
export async function readText(
  door: DirectDoor,
  agent: DirectAgent,
  workspaceId: string,
  path: string,
): Promise<string> {
  const file = await door.call('read_file', { workspace_id: workspaceId, path }, agent.api_token);
  const chunks: Uint8Array[] = [];
  for await (const chunk of file.open()) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/** The refusal of a call, or its answer: the outcome of a call that may go either way. */
export async function outcome<T>(
  answer: Promise<T>,
): Promise<{ answer: T } | { refused: ServiceError }> {
  try {
    return { answer: await answer };
  } catch (error) {
    if (error instanceof ServiceError) return { refused: error };
    throw error;
  }
}
