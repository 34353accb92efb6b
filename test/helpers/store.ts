import * as assert from 'uvu/assert';
import type { Presence, Responsiveness } from './presence.ts';
import { newToken } from '../../actors/kernel/tokens.ts';
import { request as call } from './http.ts';
import { serverSuite, type ServerSuiteContext } from './server-suite.ts';
import type { TestServer } from './server.ts';
import type { Change } from './wire-types.ts';
import type { TestAgent } from './workspaces.ts';

/**
 * The store through HTTP, as the store tests call it: listings posted and read back, the store
 * as JSON, listing files, and the listings the tests post, with the shapes the service answers.
 */

/** A term the test store refuses in listings and conventions. */
export const DENIED = 'scam';

export type StoreContext = ServerSuiteContext & { operatorToken: string };

/** A suite over one server with an operator and a store that refuses DENIED. */
export function storeSuite(name: string) {
  return serverSuite(name, () => {
    const operatorToken = newToken();
    return { extra: { operatorToken }, config: { operatorToken, storeDenyTerms: [DENIED] } };
  });
}

export interface Listing {
  listing_id: string;
  kind: 'need' | 'can';
  convention: string | null;
  placed: boolean;
  placement: string[] | null;
  author: { agent_id: string; name: string; presence: Presence; responsiveness: Responsiveness };
  workspace_id: string;
  path: string;
  version: number;
  /** Everything the author wrote, apart from the service's fields. */
  agent_written: {
    name: string;
    description: string;
    need: string | null;
    can: string | null;
    contact?: string | null;
    dimensions: Record<string, unknown>;
  };
}
export interface Posted {
  listing_id: string;
  workspace_id: string;
  path: string;
  version: number;
  matches: Listing[];
}
export interface Store {
  workspaces: { workspace_id: string; owner: { agent_id: string; name: string } }[];
  listings: Listing[];
  next_cursor: string | null;
}

export const postListing = (server: TestServer, agent: TestAgent, body: Record<string, unknown>) =>
  call<Posted>(server, 'POST', '/listings', { token: agent.api_token, body });

/** Posts a listing that must be taken (201): what the service answered. */
export async function postedListing(
  server: TestServer,
  agent: TestAgent,
  body: Record<string, unknown>,
): Promise<Posted> {
  const posted = await postListing(server, agent, body);
  assert.is(posted.status, 201, JSON.stringify(posted.body));
  return posted.body;
}

/** The listing the hidden-files tests have the operator hide (a can listing in Berlin). */
export const HIDDEN_REPAIR = {
  kind: 'can',
  convention: 'local-services',
  name: 'Hidden repair',
  description: 'Repair the operator hid.',
  can: 'repair',
  dimensions: { service: 'repair', location: 'Berlin' },
};

/** The operator hides a listing (hide_listing, which must succeed). */
export async function hideListing(server: TestServer, operatorToken: string, listingId: string) {
  const hidden = await call(server, 'POST', `/operator/listings/${listingId}/hide`, {
    token: operatorToken,
    body: { reason: 'Issue 32 test.' },
  });
  assert.is(hidden.status, 200, JSON.stringify(hidden.body));
}

/** The store as JSON, with a token or without. */
export const storeJson = (server: TestServer, query = '', token?: string) =>
  call<Store>(server, 'GET', `/store${query}`, {
    accept: 'application/json',
    ...(token ? { token } : {}),
  });

/** Every listing in the store (one page is enough for this suite). */
export async function wholeStore(server: TestServer): Promise<Listing[]> {
  const answer = await storeJson(server, '?limit=500');
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  assert.is(answer.body.next_cursor, null, 'the whole store fits one page');
  return answer.body.listings;
}

export const ids = (listings: Listing[]) => listings.map((listing) => listing.listing_id);

/** What the store holds, version by version: equal before and after means nothing changed. */
export async function storeFingerprint(server: TestServer): Promise<string[]> {
  return (await wholeStore(server)).map((l) => `${l.listing_id}@${l.version}`).sort();
}

export const fileUrl = (workspaceId: string, path: string) =>
  `/workspaces/${workspaceId}/files/${path}`;

export async function readText(
  server: TestServer,
  agent: TestAgent,
  workspaceId: string,
  path: string,
) {
  const response = await server.get(fileUrl(workspaceId, path), agent.api_token);
  assert.is(response.status, 200);
  return response.text();
}

export const putFile = (
  server: TestServer,
  agent: TestAgent,
  workspaceId: string,
  path: string,
  text: string,
) =>
  call<{ receipt: { version: number } }>(server, 'PUT', fileUrl(workspaceId, path), {
    token: agent.api_token,
    text,
  });

/** A can listing on local-services in `place`; `extra` overrides its fields. */
export const repairIn = (place: string, extra: Record<string, unknown> = {}) => ({
  kind: 'can',
  convention: 'local-services',
  name: `Bicycle repair in ${place}`,
  description: 'Flat tyres, brakes and gears, at your door.',
  can: 'I repair bicycles of every kind.',
  contact: 'bikes@example.org',
  dimensions: { service: 'bicycle repair', location: place, insured: 'yes' },
  ...extra,
});

/** A need listing on local-services in `place`. */
export const needIn = (place: string) => ({
  kind: 'need',
  convention: 'local-services',
  name: `Someone to fix my bicycle in ${place}`,
  description: 'The back wheel wobbles.',
  need: 'A bicycle mechanic who comes to me.',
  dimensions: { service: 'bicycle repair', location: place },
});

/** The listing a `listing.*` change carries. */
export const listingOf = (change: Change | undefined) =>
  (change?.data.listing ?? {}) as { listing_id?: string; agent_written?: { name: string } };
