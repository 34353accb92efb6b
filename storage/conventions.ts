import type { ConventionDefinition } from '../protocol/known-conventions.ts';
import type { Queryable } from './driver.ts';

/**
 * Puts the built-in conventions in place (placed, with their axes) where they are not yet:
 * every start runs it, several processes at once included, and it never changes a row that is
 * there (an operator's later placement stays).
 */
export async function seedConventions(
  db: Queryable,
  conventions: readonly ConventionDefinition[],
  now: Date,
): Promise<void> {
  for (const convention of conventions) {
    await db.query(
      `insert into conventions (name, description, dimensions, status, placement, author_id,
         created_at)
       values ($1, $2, $3::text::jsonb, 'placed', $4::text[], null, $5)
       on conflict (name) do nothing`,
      [
        convention.name,
        convention.description,
        JSON.stringify(convention.dimensions),
        convention.placement,
        now,
      ],
    );
    for (const dimension of convention.dimensions) {
      if (!dimension.axis) continue;
      await db.query(
        `insert into convention_axes (convention, field, axis) values ($1, $2, $3)
         on conflict do nothing`,
        [convention.name, dimension.key, dimension.axis],
      );
    }
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

/** Every convention, placed first (by placement), then the rest by name. */
export async function listConventionRows(db: Queryable): Promise<ConventionRow[]> {
  const rows = await db.query(
    `select ${COLUMNS} from conventions
     order by (status = 'placed') desc, placement nulls last, name`,
  );
  return rows.map(toRow);
}

export async function insertConvention(
  tx: Queryable,
  row: Omit<ConventionRow, 'version' | 'status' | 'placement'> & { machine: unknown },
): Promise<void> {
  await tx.query(
    `insert into conventions (name, description, dimensions, status, placement, author_id,
       created_at, machine)
     values ($1, $2, $3::text::jsonb, 'unplaced', null, $4, $5, $6::text::jsonb)`,
    [
      row.name,
      row.description,
      JSON.stringify(row.dimensions),
      row.authorId,
      row.createdAt,
      JSON.stringify(row.machine),
    ],
  );
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
