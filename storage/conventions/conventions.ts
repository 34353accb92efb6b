import type { ConventionDefinition } from '../../protocol/conventions/known.ts';
import {
  conventionKeys,
  keyCountRange,
  keyPrefix,
  namePieceProbes,
  sortedNameWords,
  squashName,
} from './convention-keys.ts';
import type { Driver, Queryable } from '../driver.ts';
import { ADVISORY_LOCK } from '../locks.ts';

/**
 * Puts the built-in conventions in place (placed, with their axes) where they are not yet:
 * every start runs it, several processes at once included, and it never changes a row that is
 * there (an operator's later placement stays).
 */
export async function seedConventions(
  driver: Driver,
  conventions: readonly ConventionDefinition[],
  now: Date,
): Promise<void> {
  for (const convention of conventions) {
    const keys = conventionKeys(
      convention.name,
      convention.dimensions.map((d) => d.key),
    );
    await driver.transaction(async (tx) => {
      const inserted = await tx.query(
        `insert into conventions (name, description, dimensions, status, placement, author_id,
           created_at, squashed_name, name_words)
         values ($1, $2, $3::text::jsonb, 'placed', $4::text[], null, $5, $6, $7)
         on conflict (name) do nothing returning name`,
        [
          convention.name,
          convention.description,
          JSON.stringify(convention.dimensions),
          convention.placement,
          now,
          keys.squashed,
          keys.words,
        ],
      );
      if (inserted.length > 0) await insertDuplicateKeys(tx, convention.name, keys);
    });
    for (const dimension of convention.dimensions) {
      if (!dimension.axis) continue;
      await driver.query(
        `insert into convention_axes (convention, field, axis) values ($1, $2, $3)
         on conflict do nothing`,
        [convention.name, dimension.key, dimension.axis],
      );
    }
  }
}

/** Stores a convention's keys for the near-duplicate lookups (migration 017). */
async function insertDuplicateKeys(
  db: Queryable,
  name: string,
  keys: ReturnType<typeof conventionKeys>,
): Promise<void> {
  if (keys.pieces.length > 0) {
    await db.query(
      `insert into convention_name_pieces (name_length, piece, piece_text, convention)
       select name_length, piece, piece_text, $4
       from unnest($1::int[], $2::int[], $3::text[]) as k(name_length, piece, piece_text)`,
      [
        keys.pieces.map((p) => p.length),
        keys.pieces.map((p) => p.piece),
        keys.pieces.map((p) => p.text),
        name,
      ],
    );
  }
  if (keys.keyPrefix.length > 0) {
    await db.query(
      `insert into convention_key_prefixes (key, key_count, convention)
       select key, $2, $3 from unnest($1::text[]) as k(key)`,
      [keys.keyPrefix, keys.keyCount, name],
    );
  }
}

/** One convention as stored (migrations 008 and 009). */
export interface ConventionRow {
  name: string;
  description: string;
  dimensions: ConventionDefinition['dimensions'];
  status: 'unplaced' | 'placed' | 'refused';
  placement: string[] | null;
  authorId: string | null;
  createdAt: Date;
  version: number;
  machine: unknown;
}

const COLUMNS = `name, description, dimensions, status, placement, author_id, created_at, version,
  machine`;

function toRow(row: Record<string, unknown>): ConventionRow {
  return {
    name: row.name as string,
    description: row.description as string,
    dimensions: row.dimensions as ConventionRow['dimensions'],
    status: row.status as ConventionRow['status'],
    placement: (row.placement as string[] | null) ?? null,
    authorId: (row.author_id as string | null) ?? null,
    createdAt: row.created_at as Date,
    version: row.version as number,
    machine: row.machine ?? null,
  };
}

export async function findConvention(db: Queryable, name: string): Promise<ConventionRow | null> {
  const [row] = await db.query(`select ${COLUMNS} from conventions where name = $1`, [name]);
  return row ? toRow(row) : null;
}

/**
 * The order conventions are listed in: the built-in ones (no author) first, then the placed
 * ones by their cell in the placement tree, then the rest by name. Migration 017 indexes these
 * very expressions (conventions_list_order).
 */
const LIST_TIER = `(case when author_id is null then 0 when status = 'placed' then 1 else 2 end)`;
const LIST_PLACE = `(case when status = 'placed' then coalesce(placement, '{}'::text[])
  else '{}'::text[] end)`;
const LIST_ORDER = `${LIST_TIER}, ${LIST_PLACE}, name`;

/** Where a convention stands in the list order: the keys of a page cursor. */
export interface ConventionListKey {
  tier: number;
  place: string[];
  name: string;
}

/** Up to `limit` conventions in list order, after `after` when given, each with its list key. */
export async function listConventionPage(
  db: Queryable,
  after: ConventionListKey | undefined,
  limit: number,
): Promise<(ConventionRow & { listKey: ConventionListKey })[]> {
  const rows = await db.query(
    `select ${COLUMNS}, ${LIST_TIER} as list_tier, ${LIST_PLACE} as list_place from conventions
     ${after ? `where (${LIST_ORDER}) > ($2::int, $3::text[], $4::text)` : ''}
     order by ${LIST_ORDER} limit $1`,
    after ? [limit, after.tier, after.place, after.name] : [limit],
  );
  return rows.map((row) => ({
    ...toRow(row),
    listKey: {
      tier: row.list_tier as number,
      place: row.list_place as string[],
      name: row.name as string,
    },
  }));
}

/**
 * The conventions the near-duplicate rules could match for a proposal, in list order: a
 * superset of every convention that has the same squashed name or the same sorted words, a
 * name within two edits, or 80% of the same dimension keys, each found through an index
 * (storage/conventions/convention-keys.ts), never by reading them all.
 */
export async function nearDuplicateCandidates(
  db: Queryable,
  proposal: { name: string; dimensions: readonly { key: string }[] },
): Promise<ConventionRow[]> {
  const squashed = squashName(proposal.name);
  const probes = namePieceProbes(squashed);
  const keys = proposal.dimensions.map((d) => d.key);
  const sizes = keyCountRange(new Set(keys).size);
  const rows = await db.query(
    `select ${COLUMNS} from conventions where name in (
       select name from conventions where squashed_name = $1
       union select name from conventions where name_words = $2
       union select p.convention from convention_name_pieces p
         join unnest($3::int[], $4::int[], $5::text[]) as k(name_length, piece, piece_text)
           on p.name_length = k.name_length and p.piece = k.piece and p.piece_text = k.piece_text
       union select convention from convention_key_prefixes
         where key = any($6::text[]) and key_count between $7 and $8)
     order by ${LIST_ORDER}`,
    [
      squashed,
      sortedNameWords(proposal.name),
      probes.map((p) => p.length),
      probes.map((p) => p.piece),
      probes.map((p) => p.text),
      keyPrefix(keys),
      sizes.least,
      sizes.most,
    ],
  );
  return rows.map(toRow);
}

/** How many conventions `authorId` has registered (refused ones included). */
export async function countConventionsBy(tx: Queryable, authorId: string): Promise<number> {
  const [row] = await tx.query<{ n: number }>(
    'select count(*)::int as n from conventions where author_id = $1',
    [authorId],
  );
  return row?.n ?? 0;
}

/**
 * Makes registrations take turns, in every process on the database, until the transaction
 * ends: the per-agent count and the near-duplicate check then see every earlier registration.
 */
export async function lockConventionRegistrations(tx: Queryable): Promise<void> {
  await tx.query(`select pg_advisory_xact_lock(${ADVISORY_LOCK.conventionRegistrations})`);
}

export async function insertConvention(
  tx: Queryable,
  row: Omit<ConventionRow, 'version' | 'status' | 'placement'> & { machine: unknown },
): Promise<void> {
  const keys = conventionKeys(
    row.name,
    row.dimensions.map((d) => d.key),
  );
  await tx.query(
    `insert into conventions (name, description, dimensions, status, placement, author_id,
       created_at, machine, squashed_name, name_words)
     values ($1, $2, $3::text::jsonb, 'unplaced', null, $4, $5, $6::text::jsonb, $7, $8)`,
    [
      row.name,
      row.description,
      JSON.stringify(row.dimensions),
      row.authorId,
      row.createdAt,
      JSON.stringify(row.machine),
      keys.squashed,
      keys.words,
    ],
  );
  await insertDuplicateKeys(tx, row.name, keys);
  for (const dimension of row.dimensions) {
    if (!dimension.axis) continue;
    await addConventionAxis(tx, row.name, dimension.key, dimension.axis);
  }
}

export async function addConventionAxis(
  tx: Queryable,
  convention: string,
  field: string,
  axis: string,
): Promise<void> {
  await tx.query(
    `insert into convention_axes (convention, field, axis) values ($1, $2, $3)
     on conflict (convention, field) do update set axis = excluded.axis`,
    [convention, field, axis],
  );
}

/** Locks the convention's row; its version, or null when there is none. */
export async function lockConvention(tx: Queryable, name: string): Promise<number | null> {
  const [row] = await tx.query<{ version: number }>(
    'select version from conventions where name = $1 for update',
    [name],
  );
  return row?.version ?? null;
}

/** Writes the machine's state if the row is still at `version`; the new version or null. */
export async function updateConventionState(
  tx: Queryable,
  name: string,
  version: number,
  state: { status: string; placement: string[] | null; machine: unknown },
): Promise<number | null> {
  const [row] = await tx.query<{ version: number }>(
    `update conventions set status = $3, placement = $4::text[], machine = $5::text::jsonb,
       version = version + 1
     where name = $1 and version = $2 returning version`,
    [name, version, state.status, state.placement, JSON.stringify(state.machine)],
  );
  return row?.version ?? null;
}

export interface RelationRow {
  relationId: string;
  a: string;
  b: string;
  sharedAxes: { axis: string; a_field: string; b_field: string }[];
  differences: string;
  authorId: string;
  createdAt: Date;
}

/** Records (or replaces) what two conventions share and how they differ. */
export async function upsertRelation(tx: Queryable, row: RelationRow): Promise<RelationRow> {
  const [stored] = await tx.query<{ relation_id: string; created_at: Date }>(
    `insert into convention_relations (relation_id, a, b, shared_axes, differences, author_id,
       created_at)
     values ($1, $2, $3, $4::text::jsonb, $5, $6, $7)
     on conflict (a, b) do update set shared_axes = excluded.shared_axes,
       differences = excluded.differences, author_id = excluded.author_id,
       created_at = excluded.created_at
     returning relation_id, created_at`,
    [
      row.relationId,
      row.a,
      row.b,
      JSON.stringify(row.sharedAxes),
      row.differences,
      row.authorId,
      row.createdAt,
    ],
  );
  return { ...row, relationId: stored?.relation_id ?? row.relationId };
}

export async function relationsOf(db: Queryable, name: string): Promise<RelationRow[]> {
  const rows = await db.query<{
    relation_id: string;
    a: string;
    b: string;
    shared_axes: RelationRow['sharedAxes'];
    differences: string;
    author_id: string;
    created_at: Date;
  }>(
    `select relation_id, a, b, shared_axes, differences, author_id, created_at
     from convention_relations where a = $1 or b = $1 order by created_at`,
    [name],
  );
  return rows.map((r) => ({
    relationId: r.relation_id,
    a: r.a,
    b: r.b,
    sharedAxes: r.shared_axes,
    differences: r.differences,
    authorId: r.author_id,
    createdAt: r.created_at,
  }));
}
