import type { Queryable } from '../driver.ts';

/**
 * The YAML header the index read from one version of a file, for the capabilities that act on
 * it (a deal's terms, a payment's deal title): `indexed_versions.fields`.
 */

/**
 * The header of one version; null when the index kept none (not markdown, no header, or one it
 * could not read), and `let_go` when the file was deleted since: a delete empties what the index
 * kept of every version of the path (./file-index.ts letGoIndexedVersions; `kept_bytes` 0 marks
 * it, as every header kept counts at least the 2 bytes of `{}`).
 */
export async function findVersionHeader(
  db: Queryable,
  workspaceId: string,
  path: string,
  version: number,
): Promise<{ fields: Record<string, unknown> } | 'let_go' | null> {
  const [row] = await db.query<{ fields: Record<string, unknown>; let_go: boolean }>(
    `select fields, kept_bytes = 0 as let_go from indexed_versions
     where workspace_id = $1 and path = $2 and version = $3`,
    [workspaceId, path, version],
  );
  if (!row) return null;
  return row.let_go ? 'let_go' : { fields: row.fields };
}

/** The header's fields of one version (findVersionHeader), or null when none is kept. */
export async function findHeaderFields(
  db: Queryable,
  workspaceId: string,
  path: string,
  version: number,
): Promise<Record<string, unknown> | null> {
  const header = await findVersionHeader(db, workspaceId, path, version);
  return header !== null && header !== 'let_go' ? header.fields : null;
}

/**
 * SQL for a query that reads headers row by row in one statement: the header the index kept of
 * the version the three SQL expressions name, as a table of one column, `fields` (the header as
 * jsonb; `{}` once let go). Join it lateral: `left join lateral ${versionHeaderSql(...)} v on
 * true` keeps every row of the caller's, with `v.fields` null where the index kept nothing.
 */
export function versionHeaderSql(version: {
  workspaceId: string;
  path: string;
  version: string;
}): string {
  return `(select kept.fields from indexed_versions kept
     where kept.workspace_id = ${version.workspaceId} and kept.path = ${version.path}
       and kept.version = ${version.version})`;
}
