import type { Queryable } from './driver.ts';

/** One indexed version of a markdown file (migrations/007_file_index.sql). */
export interface IndexedVersion {
  workspaceId: string;
  path: string;
  version: number;
  sha256: string;
  authorId: string;
  savedAt: Date;
  visibility: 'private' | 'public';
  convention: string | null;
  fields: Record<string, unknown>;
  body: string;
}

/** Text past this many characters is left out of the search column (a tsvector holds < 1 MB). */
export const SEARCH_TEXT_MAX_CHARS = 200_000;

/** The words a version is found by: every string and number of its header, then its body. */
export function searchText(fields: unknown, body: string): string {
  const parts: string[] = [];
  const walk = (value: unknown) => {
    if (typeof value === 'string' || typeof value === 'number') parts.push(String(value));
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(fields);
  parts.push(body);
  return parts.join('\n').slice(0, SEARCH_TEXT_MAX_CHARS);
}

export async function insertIndexedVersion(tx: Queryable, row: IndexedVersion): Promise<void> {
  await tx.query(
    `insert into indexed_versions (workspace_id, path, version, sha256, author_id, saved_at,
       visibility, convention, fields, body, search, current)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9::text::jsonb, $10,
       to_tsvector('pg_catalog.english', $11), true)`,
    [
      row.workspaceId,
      row.path,
      row.version,
      row.sha256,
      row.authorId,
      row.savedAt,
      row.visibility,
      row.convention,
      JSON.stringify(row.fields),
      row.body,
      searchText(row.fields, row.body),
    ],
  );
}

/** The path's indexed versions are no longer current (a new version is saved, or it is deleted). */
export async function retireIndexedVersions(
  tx: Queryable,
  workspaceId: string,
  path: string,
): Promise<void> {
  await tx.query(
    'update indexed_versions set current = false where workspace_id = $1 and path = $2 and current',
    [workspaceId, path],
  );
}
