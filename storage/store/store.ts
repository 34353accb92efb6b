import { agentNameSql } from '../agents/agent-names.ts';
import { suspendedAgentIdsSql } from '../agents/agent-suspensions.ts';
import { axisFieldsSql } from '../conventions/convention-axes.ts';
import {
  conventionPlacementsSql,
  registeredConventionSql,
} from '../conventions/registered-conventions.ts';
import type { Queryable } from '../driver.ts';
import { currentPublicVersionsSql } from '../index/current-versions.ts';
import { workspaceVisibilityWhenSql } from '../workspaces/workspace-visibility.ts';
import { workspaceOwnersAmongSql } from '../workspaces/owned-workspaces.ts';
import { knockAnswerMediansSql } from '../presence/responsiveness.ts';
import { paymentBackedRatingsSql } from '../deals/reputation-counts.ts';

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
  /** Where it stands in a sorted order (StoreFilter.sort), for the next page's cursor. */
  rank?: Rank;
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
  /** Only the listings of these authors (the store's `online=1`: those online now). */
  anyAuthor?: readonly string[] | undefined;
  /** The order (default newest first): see StoreSort. */
  sort?: StoreSort | undefined;
  /** Strictly after this one in the store's order: its rank (sorted orders), then newest first. */
  before?: { rank?: Rank; savedAt: string; workspaceId: string; path: string } | undefined;
}

/**
 * The store's orders. `newest`: by saved time. `responsive`: authors who answer knocks fastest
 * first (their knock answer median; those with none measured last). `reputation`: authors with
 * the most payment-backed ratings first. Among equals, newest first.
 */
export type StoreSort = 'newest' | 'responsive' | 'reputation';

/**
 * Where a listing stands in a sorted order, before its time: `nothing` 1 when its author has no
 * figure (after those who have), and `figure`, smaller first.
 */
export type Rank = readonly [nothing: number, figure: number];

/** Each sorted order's figures by author (`agent_id`, `figure`), and their direction. */
const RANKED: Record<Exclude<StoreSort, 'newest'>, { figures: string; descending: boolean }> = {
  responsive: { figures: knockAnswerMediansSql(), descending: false },
  reputation: { figures: paymentBackedRatingsSql(), descending: true },
};

/**
 * A listing (`l`) the store shows, as its row keeps it (migration 030): in a public workspace,
 * not hidden by the operator, its author not suspended (migration 033). A listing's author is
 * its public workspace's owner (only the owner writes there), so the author's suspension is
 * the workspace's too. The suspended agents are an array read once per statement (an InitPlan
 * over migration 033's partial index), tested inside the workspace's subquery: a condition on
 * `l` outside it would shrink the planner's row estimates and tip the store's reads into JIT.
 * The listing keeps its current version's time, convention, words and header terms, so the
 * filters and the order are read from `listings` and its indexes alone. Every condition is on
 * `l` alone, so that a walk in the store's order can test each row as it comes.
 */
const IN_STORE = `l.hidden_at is null and ${workspaceVisibilityWhenSql(
  'l.workspace_id',
  `l.author_id <> all (${suspendedAgentIdsSql()})`,
)} = 'public'`;

/** The registered convention of `l` (null when there is none: the trunk, or an unknown name). */
const CONVENTION_OF_L = registeredConventionSql('l.convention');

/**
 * The current, indexed version (`iv`) of a listing, looked up by its key. Every
 * listing has one, public (a listing's save is refused unless the index reads it, its delete
 * deletes the listing, and a listing's workspace is public). A subquery the planner keeps apart
 * (`offset 0`): joined as a table, it would count on one version in a hundred listings
 * (workspace_id and path taken as unrelated).
 */
const CURRENT_VERSION = (l: string) => `cross join lateral (
       select iv.fields, iv.convention, iv.author_id, iv.version
       from (${currentPublicVersionsSql()}) iv
       where iv.workspace_id = ${l}.workspace_id and iv.path = ${l}.path offset 0) iv`;

/**
 * The conditions of `filter` over `l` (but `before`), binding values through `bind`, all on
 * what the listing keeps (migration 030). The axis filters go through convention_axes, as the
 * index's axis_values does: `place=Berlin` finds `location: Berlin` and `city: Berlin` alike.
 */
function storeConditions(filter: StoreFilter, bind: (value: unknown) => string): string[] {
  const where: string[] = [];
  if (filter.convention !== undefined) where.push(`l.convention = ${bind(filter.convention)}`);
  if (filter.kind !== undefined) where.push(`l.kind = ${bind(filter.kind)}`);
  if (filter.listingId !== undefined) where.push(`l.listing_id = ${bind(filter.listingId)}`);
  if (filter.authorId !== undefined) where.push(`l.author_id = ${bind(filter.authorId)}`);
  if (filter.q !== undefined) {
    where.push(`l.search @@ websearch_to_tsquery('pg_catalog.english', ${bind(filter.q)})`);
  }
  // The listing's (field, value) pairs of the axis's fields on its convention: any such pair
  // narrows the rows through the terms' index, then the row's own convention decides. With the
  // convention asked for, every row kept has that one: its fields are found once, not per row.
  const conventionOfRow = () =>
    filter.convention === undefined
      ? CONVENTION_OF_L
      : registeredConventionSql(bind(filter.convention));
  const onAxis = (axis: 'place' | 'price', values: string) => {
    const terms = (convention?: string) => `array(
      select store_field_term(ax.field, v) from (${axisFieldsSql(axis, convention)}) ax,
        unnest(${values}) v)`;
    return `l.field_terms && ${terms()} and l.field_terms && ${terms(
      `coalesce(${conventionOfRow()}, '')`,
    )}`;
  };
  if (filter.place !== undefined) {
    where.push(onAxis('place', `array[lower(${bind(filter.place)}::text)]`));
  }
  if (filter.price !== undefined) {
    where.push(onAxis('price', `array[lower(${bind(filter.price)}::text)]`));
  }
  if (filter.anyPlace !== undefined)
    where.push(onAxis('place', `${bind(filter.anyPlace)}::text[]`));
  if (filter.exclude !== undefined) where.push(`l.listing_id <> ${bind(filter.exclude)}`);
  if (filter.anyAuthor !== undefined) {
    where.push(`l.author_id = any(${bind(filter.anyAuthor)}::uuid[])`);
  }
  return where;
}

/** After `before` in the store's order (saved_at desc, workspace_id, path): a page's start. */
function afterCursor(
  before: NonNullable<StoreFilter['before']>,
  bind: (value: unknown) => string,
): string {
  const at = bind(before.savedAt);
  return `(l.saved_at < ${at}::timestamptz or (l.saved_at = ${at}::timestamptz and
        (l.workspace_id, l.path) > (${bind(before.workspaceId)}::uuid, ${bind(before.path)}::text)))`;
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
 * The LIMIT of a store read, written into the text: the smallest power of two that holds
 * `limit` (a few texts, each prepared once). A bound parameter would leave the planner a
 * generic plan that expects a tenth of the table and sorts it all, or starts parallel workers.
 */
function limitBucket(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error(`bad store limit ${limit}`);
  return 2 ** Math.ceil(Math.log2(limit));
}

/**
 * Listings a store page walks in the store's order before it asks the indexes instead: when the
 * newest STORE_WALK listings after the page's start (of the convention and kind asked for, when
 * both are: listings_store_convention walks them) hold a full page of matches, these are the
 * page, found by reading as few rows as it takes (the first page reads one page). A rarer filter
 * is answered by the indexes (the words', the header terms'), which fetch every match and sort
 * them: quick when matches are few. The planner cannot tell which is which from its estimates
 * (two common words are taken as unrelated, a place as rare).
 */
const STORE_WALK = 4096;

/**
 * The listings of a sorted order that `filter` keeps, after `filter.before`, in two parts. First
 * the listings of the authors who have a figure: the authors walked in the figure's order
 * through its index, each author's listings newest first, so a page reads the few authors it
 * shows. Then every other listing, newest first, as the default order walks them (with "its
 * author has no figure" as one more condition). A cursor in the second part skips the first.
 */
function sortedFound(
  filter: StoreFilter,
  sort: Exclude<StoreSort, 'newest'>,
  columns: string,
  bind: (value: unknown) => string,
  limit: number,
): string {
  const { figures, descending } = RANKED[sort];
  const before = filter.before;
  const ranked = `(${figures}) g where g.figure ${descending ? '> 0' : 'is not null'}`;
  const unranked = `not exists (select 1 from ${ranked} and g.agent_id = l.author_id)`;
  const rest = `select r.*, 1 as nothing, 0::float8 as figure from (${newestFound(
    { ...filter, before: before?.rank?.[0] === 1 ? before : undefined },
    columns,
    bind,
    limit,
    [unranked],
  )}) r`;
  if (before?.rank?.[0] === 1) return rest;
  const where = [IN_STORE, ...storeConditions(filter, bind)];
  if (before?.rank) {
    const value = bind(before.rank[1]);
    where.push(`(f.figure > ${value}::float8
      or (f.figure = ${value}::float8 and ${afterCursor(before, bind)}))`);
  }
  const first = `select ${columns}, 0 as nothing, f.figure
    from (select g.agent_id, ${descending ? '-' : ''}g.figure::float8 as figure from ${ranked}) f
    join listings l on l.author_id = f.agent_id
    where ${where.join(' and ')}
    order by f.figure, l.saved_at desc, l.workspace_id, l.path
    limit ${limitBucket(limit)}`;
  return `select * from (${first}) a union all (${rest})`;
}

/** The listings of the default order, newest first, that `filter` keeps, after `filter.before`. */
function newestFound(
  filter: StoreFilter,
  columns: string,
  bind: (value: unknown) => string,
  limit: number,
  more: readonly string[] = [],
): string {
  const where = [IN_STORE, ...storeConditions(filter, bind), ...more];
  const start = filter.before ? afterCursor(filter.before, bind) : null;
  const matching = [...where, ...(start ? [start] : [])].join(' and ');
  const walk = [
    ...(filter.convention !== undefined && filter.kind !== undefined
      ? [`l.convention = ${bind(filter.convention)}`, `l.kind = ${bind(filter.kind)}`]
      : []),
    ...(start ? [start] : []),
  ];
  const order = 'order by l.saved_at desc, l.workspace_id, l.path';
  // One listing, or one author's: found through the listings' own indexes, no walk.
  if (filter.listingId !== undefined || filter.authorId !== undefined) {
    return `select ${columns} from listings l where ${matching} ${order} limit ${limitBucket(limit)}`;
  }
  // The walk stops at `limit` matches: bound, as its plan is the walk whatever the number.
  const fetched = `${bind(limit)}::bigint`;
  return `with walked as (
         select ${columns}
         from (select * from listings l ${walk.length ? `where ${walk.join(' and ')}` : ''}
           ${order} limit ${STORE_WALK}) l
         where ${where.join(' and ')} ${order} limit ${fetched}
       )
       select * from walked where (select count(*) from walked) = ${fetched}
       union all
       select * from (select ${columns} from listings l where ${matching} ${order}
         limit ${limitBucket(limit)}) l
       where (select count(*) from walked) < ${fetched}`;
}

/** The store's listings that `filter` keeps, in its order (newest first by default). */
export async function readStore(
  db: Queryable,
  filter: StoreFilter,
  limit: number,
): Promise<StoreListing[]> {
  const { params, bind } = parameters();
  const columns =
    'l.listing_id, l.kind, l.author_id, l.workspace_id, l.path, l.saved_at, l.convention';
  const sort = filter.sort ?? 'newest';
  const ranked = sort !== 'newest';
  const found = ranked
    ? sortedFound(filter, sort, columns, bind, limit)
    : newestFound(filter, columns, bind, limit);
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
    nothing: number | null;
    figure: number | null;
  }>(
    `select s.listing_id, s.kind, iv.fields, iv.convention, c.status, c.placement,
       iv.author_id, ${agentNameSql('s.author_id')} as author_name, s.workspace_id, s.path, iv.version, s.saved_at,
       ${ranked ? 's.nothing, s.figure' : 'null::int as nothing, null::float8 as figure'}
     from (${found}) s
     ${CURRENT_VERSION('s')}
     left join (${conventionPlacementsSql()}) c on c.name = s.convention
     order by ${ranked ? 's.nothing, s.figure, ' : ''}s.saved_at desc, s.workspace_id, s.path`,
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
    ...(r.nothing !== null && r.figure !== null && { rank: [r.nothing, r.figure] as const }),
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
  const where = storeConditions(filter, bind);
  if (filter.before) where.push(afterCursor(filter.before, bind));
  // The watches first (few agents follow their matches; often none), and only their authors'
  // listings after: left to itself, the planner may start from the listings the filter finds,
  // which costs a full-text or field search per save even when no watch follows anything
  // (9 ms a save on PGlite, whose tables are seldom analyzed; bench/store.ts "Watchers").
  const rows = await db.query<{ watch_id: string; agent_id: string }>(
    `with following as materialized (
       select lw.watch_id, lw.agent_id, lw.created_at from listing_watches lw
       where lw.match_my_listings and lw.agent_id <> ${bind(authorId)}
     )
     select f.watch_id, f.agent_id from following f
     where exists (select 1 from listings l ${CURRENT_VERSION('l')}
         where l.author_id = f.agent_id and ${IN_STORE}
           ${where.map((c) => `and ${c}`).join(' ')})
     order by f.agent_id, f.created_at`,
    params,
  );
  return rows.map((r) => ({ watchId: r.watch_id, agentId: r.agent_id }));
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
    `select w.workspace_id, w.owner_agent_id as owner_id,
       ${agentNameSql('w.owner_agent_id')} as owner_name, coalesce(n.listings, 0) as listings
     from (${workspaceOwnersAmongSql('$1')}) w
     left join workspace_listing_counts n on n.workspace_id = w.workspace_id
     order by w.workspace_id`,
    [workspaceIds],
  );
  return rows.map((r) => ({
    workspaceId: r.workspace_id,
    ownerId: r.owner_id,
    ownerName: r.owner_name,
    listings: r.listings,
  }));
}
