import type { Socket } from 'socket.io-client';
import * as assert from 'uvu/assert';
import { callJson } from './http.ts';
import type { TestServer } from './server.ts';
import type { Change } from './wire-types.ts';

/** The changes the agent has not read yet (reading moves its remembered place). */
export async function newChanges(
  server: TestServer,
  agent: { api_token: string },
): Promise<Change[]> {
  const page = await callJson<{ changes: Change[] }>(
    server,
    'GET',
    '/changes?limit=500',
    agent.api_token,
  );
  assert.is(page.status, 200);
  return page.body.changes;
}

export const ofType = (changes: Change[], type: string) => changes.filter((c) => c.type === type);

/** The agent's unread changes of `type`, read on `server` (reading moves its place past all). */
export async function heard(
  server: TestServer,
  agent: { api_token: string },
  type: string,
): Promise<Change[]> {
  return ofType(await newChanges(server, agent), type);
}

/** The change events the socket receives from now until the first of type `last`, included. */
export function changesUntil<T extends { type: string } = Change>(
  socket: Socket,
  last: string,
): Promise<T[]> {
  return new Promise((resolve) => {
    const seen: T[] = [];
    const listener = (event: T) => {
      seen.push(event);
      if (event.type === last) {
        socket.off('change', listener);
        resolve(seen);
      }
    };
    socket.on('change', listener);
  });
}
