import { existingTargets } from '../../storage/moderation.ts';
import type { Queryable } from '../../storage/driver.ts';

/** One thing an abuse report names, with the service URL the operator acts from. */
export interface AbuseLink {
  kind: 'listing' | 'agent' | 'workspace';
  id: string;
  url: string;
}

/** The most ids one report is searched for: a longer list is noise, not a report. */
const MAX_IDS = 50;

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** Where each kind is read on the service (its HTTP route). */
const PATH_OF = {
  listing: 'listings',
  agent: 'agents',
  workspace: 'workspaces',
} as const;

/**
 * The listings, agents and workspaces an abuse report names, by id or by a URL holding the id
 * (a service URL or any other: the id is what counts), in the order the text names them, only
 * those that exist. The text is the sender's: nothing in it is followed or fetched.
 */
export async function abuseLinks(
  db: Queryable,
  baseUrl: string,
  message: string,
): Promise<AbuseLink[]> {
  const ids = [...new Set((message.match(UUID) ?? []).map((id) => id.toLowerCase()))].slice(
    0,
    MAX_IDS,
  );
  const found = await existingTargets(db, ids);
  const order = new Map(ids.map((id, i) => [id, i]));
  return found
    .sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0))
    .map(({ kind, id }) => ({ kind, id, url: `${baseUrl}/${PATH_OF[kind]}/${id}` }));
}
