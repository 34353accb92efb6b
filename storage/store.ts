import type { Queryable } from './driver.ts';

/** One listing as the store shows it: its current version, author and convention. */
export interface StoreListing {
  listingId: string;
  kind: 'need' | 'can';
  fields: Record<string, unknown>;
  convention: string | null;
  placed: boolean;
  placement: string[] | null;
  authorId: string;
  authorName: string;
  workspaceId: string;
  path: string;
  version: number;
  savedAt: Date;
}

export interface StoreFilter {
  convention?: string | undefined;
  kind?: 'need' | 'can' | undefined;
  q?: string | undefined;
  place?: string | undefined;
  price?: string | undefined;
  /** Only this listing (get_listing). */
  listingId?: string | undefined;
  /** Only the listings this agent posted (list_my_listings, the agent profile). */
  authorId?: string | undefined;
  /** All but this listing (matches). */
  exclude?: string | undefined;
  /** Listings sharing one of these values on the place axis (lower case). */
  anyPlace?: string[] | undefined;
  /** Newest first: strictly after this one in the store's order (saved_at desc, workspace, path). */
  before?: { savedAt: string; workspaceId: string; path: string } | undefined;
}

/**
 * The listings the store shows: a listing (`l`) in a public workspace (`w`), at its current,
 * indexed version (`iv`), with its convention (`c`) if registered.
 */
const STORE_LISTINGS = `listings l
     join workspaces w on w.workspace_id = l.workspace_id and w.visibility = 'public'
     join indexed_versions iv on iv.workspace_id = l.workspace_id and iv.path = l.path
       and iv.current and iv.visibility = 'public'
     left join conventions c on c.name = iv.convention`;

/**
 * The conditions of `filter` over STORE_LISTINGS, binding values through `bind`. The axis
 * filters go through convention_axes, as the index's axis_values does: `place=Berlin` finds
 * `location: Berlin` and `city: Berlin` alike.
 */
async function storeConditions(
  db: Queryable,
  filter: StoreFilter,
  bind: (value: unknown) => string,
): Promise<string[]> {
  const where: string[] = [];
  if (filter.convention !== undefined) where.push(`iv.convention = ${bind(filter.convention)}`);
  if (filter.kind !== undefined) where.push(`l.kind = ${bind(filter.kind)}`);
  if (filter.listingId !== undefined) where.push(`l.listing_id = ${bind(filter.listingId)}`);
  if (filter.authorId !== undefined) where.push(`l.author_id = ${bind(filter.authorId)}`);
  if (filter.q !== undefined) {
    where.push(`iv.search @@ websearch_to_tsquery('pg_catalog.english', ${bind(filter.q)})`);
  }
  const onAxis = (axis: string, values: string) => `exists (
    select 1 from convention_axes ax
    where ax.convention = coalesce(c.name, '') and ax.axis = '${axis}'
      and (lower(iv.fields ->> ax.field) = any(${values})
        or (jsonb_typeof(iv.fields -> ax.field) = 'array' and exists (
          select 1 from jsonb_array_elements_text(iv.fields -> ax.field) e
          where lower(e) = any(${values})))))`;
  if (filter.place !== undefined) {
    where.push(onAxis('place', `array[lower(${bind(filter.place)}::text)]`));
    // A place in a header is also among the version's words: the full-text index narrows the
    // rows to look at first (unless the place is only stop words, which match no row there).
    if (await hasLexemes(db, filter.place)) {
      where.push(`iv.search @@ plainto_tsquery('pg_catalog.english', ${bind(filter.place)})`);
    }
  }
  if (filter.price !== undefined) {
    where.push(onAxis('price', `array[lower(${bind(filter.price)}::text)]`));
  }
  if (filter.anyPlace !== undefined)
    where.push(onAxis('place', `${bind(filter.anyPlace)}::text[]`));
  if (filter.exclude !== undefined) where.push(`l.listing_id <> ${bind(filter.exclude)}`);
  if (filter.before !== undefined) {
    const at = bind(filter.before.savedAt);
    where.push(
      `(iv.saved_at < ${at}::timestamptz or (iv.saved_at = ${at}::timestamptz and
        (iv.workspace_id, iv.path) > (${bind(filter.before.workspaceId)}::uuid, ${bind(
          filter.before.path,
        )}::text)))`,
    );
  }
  return where;
}

/** Parameters bound in order: `bind` answers the placeholder of each value. */
function parameters() {
  const params: unknown[] = [];
  const bind = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  return { params, bind };
}

/**
 * STORE_LISTINGS read from the indexed versions' side, for the store's pages: the current
 * versions in their order (indexed_versions_current_recent) or as the full-text index finds
 * them, each looked up in `listings` by its key. The lookup is a subquery the planner keeps
 * apart (`offset 0`), so it is planned as one row per version: joined as a table, the planner
 * takes the listings of a version for a 1-in-100 chance (workspace_id and path counted as if
 * unrelated), and reads all 100,000 listings, or starts parallel workers, to find 50.
 */
const STORE_BY_VERSION = `(select * from indexed_versions
       where current and visibility = 'public') iv
     cross join lateral (select l.listing_id, l.kind, l.author_id, l.workspace_id, l.path
       from listings l where l.workspace_id = iv.workspace_id and l.path = iv.path offset 0) l
     join workspaces w on w.workspace_id = l.workspace_id and w.visibility = 'public'
     left join conventions c on c.name = iv.convention`;

/**
 * The LIMIT of a store read, written into the text: the smallest power of two that holds
 * `limit` (a few texts, each prepared once). A bound parameter would leave the planner a
 * generic plan that expects a tenth of the table and sorts it all, or starts parallel workers.
 */
function limitBucket(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`bad store limit ${limit}`);
  return 2 ** Math.ceil(Math.log2(limit));
}

/** The store's listings that `filter` keeps, newest first. */
export async function readStore(
  db: Queryable,
  filter: StoreFilter,
  limit: number,
): Promise<StoreListing[]> {
  const { params, bind } = parameters();
  const where = await storeConditions(db, filter, bind);
  // One listing, or one author's: found through the listings' own indexes.
  const byListing = filter.listingId !== undefined || filter.authorId !== undefined;
  const rows = await db.query<{
    listing_id: string;
    kind: 'need' | 'can';
    fields: Record<string, unknown>;
    convention: string | null;
    status: string | null;
    placement: string[] | null;
    author_id: string;
    author_name: string;
    workspace_id: string;
    path: string;
    version: number;
    saved_at: Date;
  }>(
    `select l.listing_id, l.kind, iv.fields, iv.convention, c.status, c.placement,
       iv.author_id, a.name as author_name, l.workspace_id, l.path, iv.version, iv.saved_at
     from ${byListing ? STORE_LISTINGS : STORE_BY_VERSION}
     join agents a on a.agent_id = l.author_id
     ${where.length ? `where ${where.join(' and ')}` : ''}
     order by iv.saved_at desc, iv.workspace_id, iv.path
     limit ${limitBucket(limit)}`,
    params,
  );
  return rows.slice(0, limit).map((r) => ({
    listingId: r.listing_id,
    kind: r.kind,
    fields: r.fields,
    convention: r.convention,
    placed: r.status === 'placed',
    placement: r.status === 'placed' ? r.placement : null,
    authorId: r.author_id,
    authorName: r.author_name,
    workspaceId: r.workspace_id,
    path: r.path,
    version: r.version,
    savedAt: r.saved_at,
  }));
}

/**
 * The watches that follow their agent's own listings (`match_my_listings`) and hold a listing
 * that `filter` keeps: the agent's current listings in the store, read at this moment, so a
 * listing posted or deleted since the watch was made counts as it is now. Never `authorId`'s
 * own watches (no one hears of its own listing).
 */
export async function watchesFollowingMatches(
  db: Queryable,
  authorId: string,
  filter: StoreFilter,
): Promise<{ watchId: string; agentId: string }[]> {
  const { params, bind } = parameters();
  const where = await storeConditions(db, filter, bind);
  const rows = await db.query<{ watch_id: string; agent_id: string }>(
    `select lw.watch_id, lw.agent_id from listing_watches lw
     where lw.match_my_listings and lw.agent_id <> ${bind(authorId)}
       and exists (select 1 from ${STORE_LISTINGS}
         where l.author_id = lw.agent_id ${where.map((c) => `and ${c}`).join(' ')})
     order by lw.agent_id, lw.created_at`,
    params,
  );
  return rows.map((r) => ({ watchId: r.watch_id, agentId: r.agent_id }));
}

async function hasLexemes(db: Queryable, text: string): Promise<boolean> {
  const [row] = await db.query<{ n: number }>(
    "select numnode(plainto_tsquery('pg_catalog.english', $1))::int as n",
    [text],
  );
  return (row?.n ?? 0) > 0;
}

/** The workspaces that hold listings, with their owners and listing counts (kept, migration 027). */
export async function storeWorkspaces(
  db: Queryable,
  workspaceIds: string[],
): Promise<{ workspaceId: string; ownerId: string; ownerName: string; listings: number }[]> {
  const rows = await db.query<{
    workspace_id: string;
    owner_id: string;
    owner_name: string;
    listings: number;
  }>(
    `select w.workspace_id, w.owner_agent_id as owner_id, a.name as owner_name,
       coalesce(n.listings, 0) as listings
     from workspaces w join agents a on a.agent_id = w.owner_agent_id
     left join workspace_listing_counts n on n.workspace_id = w.workspace_id
     where w.workspace_id = any($1::uuid[]) order by w.workspace_id`,
    [workspaceIds],
  );
  return rows.map((r) => ({
    workspaceId: r.workspace_id,
    ownerId: r.owner_id,
    ownerName: r.owner_name,
    listings: r.listings,
  }));
}
