import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { directDoor, type DirectAgent, type DirectDoor, type DirectInput } from './direct.ts';
import { startTestServer, type TestServer } from './server.ts';
import { DENIED } from './store.ts';

/**
 * The store through the direct door (./direct.ts), as its rule suites call it: listings posted
 * and the store read back. The HTTP versions, and the listings the tests post (repairIn,
 * needIn), are in ./store.ts.
 */

/** What a direct store suite holds: its server, the door, and the operator's token. */
export interface DirectStoreContext {
  server: TestServer;
  door: DirectDoor;
  operatorToken: string;
}

/** A server with an operator and a store that refuses DENIED, as storeSuite's; and its door. */
export async function startDirectStore(): Promise<DirectStoreContext> {
  const operatorToken = newToken();
  const server = await startTestServer({ operatorToken, storeDenyTerms: [DENIED] });
  return { server, door: directDoor(server.services), operatorToken };
}

/** Posts a listing (fields as repairIn and needIn write them) that must be taken. */
export const postedDirect = (door: DirectDoor, agent: DirectAgent, fields: object) =>
  door.call('post_listing', fields as DirectInput<'post_listing'>, agent.api_token);

/** One page of the store as JSON, as `token` or anyone reads it. */
export const directStore = (
  door: DirectDoor,
  input: DirectInput<'read_store'> = {},
  token?: string,
) => door.call('read_store', input, token);

/** Every listing in the store (one page is enough for these suites). */
export async function directWholeStore(door: DirectDoor) {
  const store = await directStore(door, { limit: 500 });
  assert.is(store.next_cursor, null, 'the whole store fits one page');
  return store.listings;
}
