import { uuidsOf, type Queryable } from '../driver.ts';
import { ADVISORY_LOCK_CLASS } from '../locks.ts';

/** A listing: a file in a public workspace, named (migrations 008 and 009). */
export interface ListingRow {
  listingId: string;
  workspaceId: string;
  path: string;
  kind: 'need' | 'can';
  authorId: string;
}

export async function findListing(db: Queryable, listingId: string): Promise<ListingRow | null> {
  const [row] = await db.query<{
    listing_id: string;
    workspace_id: string;
    path: string;
    kind: 'need' | 'can';
    author_id: string;
  }>('select listing_id, workspace_id, path, kind, author_id from listings where listing_id = $1', [
    listingId,
  ]);
  return row
    ? {
        listingId: row.listing_id,
        workspaceId: row.workspace_id,
        path: row.path,
        kind: row.kind,
        authorId: row.author_id,
      }
    : null;
}

export async function findListingAt(
  db: Queryable,
  workspaceId: string,
  path: string,
): Promise<ListingRow | null> {
  const [row] = await db.query<{ listing_id: string }>(
    'select listing_id from listings where workspace_id = $1 and path = $2',
    [workspaceId, path],
  );
  return row ? findListing(db, row.listing_id) : null;
}

/**
 * What the store filters and orders a listing by, copied from the version the save indexes
 * (as storage/index/file-index.ts writes it): kept on the listing's row (migration 030), so a store
 * page reads narrow rows and looks up only the ones it shows.
 */
export interface ListingKept {
  savedAt: Date;
  convention: string | null;
  fields: Record<string, unknown>;
  /** The words the index reads in the version (storage/index/file-index.ts searchText). */
  searchText: string;
}

/**
 * Records the listing, or its new kind, with what the store keeps of its current version; a new
 * one counts in its workspace's listings (workspace_listing_counts, migration 027), in the same
 * statement.
 */
export async function upsertListing(
  tx: Queryable,
  row: ListingRow & { createdAt: Date; kept: ListingKept },
): Promise<void> {
  await tx.query(
    `with saved as (
       insert into listings (listing_id, workspace_id, path, kind, author_id, created_at,
         saved_at, convention, search, field_terms)
       values ($1, $2, $3, $4, $5, $6, $7, $8, to_tsvector('pg_catalog.english', $9),
         store_field_terms($10::text::jsonb))
       on conflict (listing_id) do update set kind = excluded.kind,
         saved_at = excluded.saved_at, convention = excluded.convention,
         search = excluded.search, field_terms = excluded.field_terms
       returning workspace_id, xmax = 0 as made
     )
     insert into workspace_listing_counts (workspace_id, listings)
     select workspace_id, 1 from saved where made
     on conflict (workspace_id) do update
       set listings = workspace_listing_counts.listings + 1`,
    [
      row.listingId,
      row.workspaceId,
      row.path,
      row.kind,
      row.authorId,
      row.createdAt,
      row.kept.savedAt,
      row.kept.convention,
      row.kept.searchText,
      JSON.stringify(row.kept.fields),
    ],
  );
}

/** Deletes the listing at the path, if any, and counts it out of its workspace's listings. */
export async function deleteListingAt(
  tx: Queryable,
  workspaceId: string,
  path: string,
): Promise<void> {
  await tx.query(
    `with gone as (
       delete from listings where workspace_id = $1 and path = $2 returning workspace_id
     )
     update workspace_listing_counts c set listings = c.listings - 1
     from gone where c.workspace_id = gone.workspace_id`,
    [workspaceId, path],
  );
}

/** The agent's own listings workspace, if made. */
export async function findListingWorkspace(db: Queryable, agentId: string): Promise<string | null> {
  const [row] = await db.query<{ workspace_id: string }>(
    'select workspace_id from listing_workspaces where agent_id = $1',
    [agentId],
  );
  return row?.workspace_id ?? null;
}

export async function insertListingWorkspace(
  tx: Queryable,
  agentId: string,
  workspaceId: string,
): Promise<void> {
  await tx.query('insert into listing_workspaces (agent_id, workspace_id) values ($1, $2)', [
    agentId,
    workspaceId,
  ]);
}

export interface WatchRow {
  watchId: string;
  agentId: string;
  convention: string | null;
  kind: 'need' | 'can' | null;
  axis: 'place' | 'price' | null;
  value: string | null;
  q: string | null;
  /** Follows the agent's own listings (watch_listings `match_my_listings`); no other criterion. */
  matchMyListings: boolean;
  createdAt: Date;
}

type WatchRecord = {
  watch_id: string;
  agent_id: string;
  convention: string | null;
  kind: 'need' | 'can' | null;
  axis: 'place' | 'price' | null;
  axis_value: string | null;
  query: string | null;
  match_my_listings: boolean;
  created_at: Date;
};

const toWatch = (r: WatchRecord): WatchRow => ({
  watchId: r.watch_id,
  agentId: r.agent_id,
  convention: r.convention,
  kind: r.kind,
  axis: r.axis,
  value: r.axis_value,
  q: r.query,
  matchMyListings: r.match_my_listings,
  createdAt: r.created_at,
});

/** Inserts the watch unless the agent holds `max` already; false then. */
export async function insertWatch(tx: Queryable, row: WatchRow, max: number): Promise<boolean> {
  await tx.query(
    `select pg_advisory_xact_lock(${ADVISORY_LOCK_CLASS.listingWatches}, hashtext($1::text))`,
    [row.agentId],
  );
  const [held] = await tx.query<{ n: number }>(
    'select count(*)::int as n from listing_watches where agent_id = $1',
    [row.agentId],
  );
  if ((held?.n ?? 0) >= max) return false;
  await tx.query(
    `insert into listing_watches (watch_id, agent_id, convention, kind, axis, axis_value, query,
       match_my_listings, created_at) values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      row.watchId,
      row.agentId,
      row.convention,
      row.kind,
      row.axis,
      row.value,
      row.q,
      row.matchMyListings,
      row.createdAt,
    ],
  );
  return true;
}

export async function listWatchRows(db: Queryable, agentId: string): Promise<WatchRow[]> {
  const rows = await db.query<WatchRecord>(
    `select watch_id, agent_id, convention, kind, axis, axis_value, query, match_my_listings,
       created_at
     from listing_watches where agent_id = $1 order by created_at, watch_id`,
    [agentId],
  );
  return rows.map(toWatch);
}

export async function deleteWatchRow(
  tx: Queryable,
  agentId: string,
  watchId: string,
): Promise<boolean> {
  const rows = await tx.query(
    'delete from listing_watches where watch_id = $1 and agent_id = $2 returning watch_id',
    [watchId, agentId],
  );
  return rows.length > 0;
}

/**
 * The watches a listing matches: every criterion a watch names holds (the axis value compared
 * without case, the text query as full-text search over `text`). Not the author's own, nor
 * the watches that follow their agent's listings (storage/store/store.ts, watchesFollowingMatches).
 */
export async function matchingWatches(
  db: Queryable,
  listing: {
    authorId: string;
    convention: string | null;
    kind: string;
    axes: { axis: string; value: string }[];
    text: string;
  },
): Promise<{ watchId: string; agentId: string }[]> {
  // One row of two arrays, not a row per watch: 1,000 matching watches took 3.7 ms as rows on
  // PGlite, 1.9 as arrays (the bench's store section, a listing told to 1,000 watchers).
  const [found] = await db.query<{ watch_ids: string | null; agent_ids: string | null }>(
    `select array_agg(w.watch_id order by w.agent_id, w.created_at)::text as watch_ids,
       array_agg(w.agent_id order by w.agent_id, w.created_at)::text as agent_ids
     from listing_watches w
     where w.agent_id <> $1 and not w.match_my_listings
       and (w.convention is null or w.convention = $2)
       and (w.kind is null or w.kind = $3)
       and (w.axis is null or exists (
         select 1 from unnest($4::text[], $5::text[]) as p(axis, value)
         where p.axis = w.axis and lower(p.value) = lower(w.axis_value)))
       and (w.query is null or to_tsvector('pg_catalog.english', $6::text)
         @@ websearch_to_tsquery('pg_catalog.english', w.query))`,
    [
      listing.authorId,
      listing.convention,
      listing.kind,
      listing.axes.map((a) => a.axis),
      listing.axes.map((a) => a.value),
      listing.text,
    ],
  );
  const watchIds = uuidsOf(found?.watch_ids ?? null);
  const agentIds = uuidsOf(found?.agent_ids ?? null);
  return watchIds.map((watchId, i) => ({ watchId, agentId: agentIds[i] as string }));
}
