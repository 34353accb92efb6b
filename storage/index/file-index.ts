import { TRUNK_FIELDS } from '../../protocol/conventions/known.ts';
import type { Queryable } from '../driver.ts';

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

/**
 * The most a version's fields (its YAML header as JSON, every alias resolved) may take in the
 * index: a header past it is not indexed (actors/index/yaml-header.ts names this bound in the
 * file's `index_error`). Without it, 40 KB of aliases stored 8.6 MB.
 */
export const INDEX_FIELDS_MAX_BYTES = 256 * 1024;

/** Text past this many characters is left out of the search column (a tsvector holds < 1 MB). */
const SEARCH_TEXT_MAX_CHARS = 200_000;

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

/**
 * The header keys `indexed_versions.dimensions` leaves out of its copy of `fields` (the stored
 * generated column of migration 013: `fields - array[...]`, these names in that order).
 */
export const NOT_DIMENSION_KEYS: readonly string[] = [...TRUNK_FIELDS, 'convention', 'kind'];

/**
 * The bytes a version's fields take in the index, counted against its author: the fields as
 * JSON and the stored copy of them the `dimensions` column keeps (all but NOT_DIMENSION_KEYS),
 * so a version keeps what it counts, up to twice INDEX_FIELDS_MAX_BYTES, not twice what it
 * counts (issue 32 §2).
 */
export function indexedFieldBytes(fields: Record<string, unknown>): {
  fields: number;
  kept: number;
} {
  const dimensions = Object.fromEntries(
    Object.entries(fields).filter(([key]) => !NOT_DIMENSION_KEYS.includes(key)),
  );
  const fieldBytes = Buffer.byteLength(JSON.stringify(fields), 'utf8');
  return { fields: fieldBytes, kept: fieldBytes + Buffer.byteLength(JSON.stringify(dimensions)) };
}

/**
 * Stores one indexed version; answers the bytes it keeps of the header (indexedFieldBytes),
 * which count against its author's quota (rule `every_kept_byte`) while the version keeps its
 * bytes: the caller adds them to the author's use (storage/files/indexed-use.ts addIndexedUse) in
 * the same transaction. The body and the search words need no count of their own: they are made
 * of the file's bytes, which are counted.
 */
export async function insertIndexedVersion(tx: Queryable, row: IndexedVersion): Promise<number> {
  const fields = JSON.stringify(row.fields);
  const bytes = indexedFieldBytes(row.fields);
  // The header reader refuses larger fields with an index error; this is the last line.
  if (bytes.fields > INDEX_FIELDS_MAX_BYTES) {
    throw new RangeError(
      `indexed fields of ${bytes.fields} bytes passed ${INDEX_FIELDS_MAX_BYTES}`,
    );
  }
  const keptBytes = bytes.kept;
  await tx.query(
    `insert into indexed_versions (workspace_id, path, version, sha256, author_id, saved_at,
       visibility, convention, fields, body, search, current, kept_bytes, withheld)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9::text::jsonb, $10,
       to_tsvector('pg_catalog.english', $11), true, $12, index_row_withheld($1, $2, $7))`,
    [
      row.workspaceId,
      row.path,
      row.version,
      row.sha256,
      row.authorId,
      row.savedAt,
      row.visibility,
      row.convention,
      fields,
      row.body,
      searchText(row.fields, row.body),
      keptBytes,
    ],
  );
  return keptBytes;
}

/**
 * A delete lets go of what the index kept of the path's versions (rule `every_kept_byte`): each
 * row keeps its key, author, time and convention, so `file_versions` still lists the history,
 * and loses its fields, body and search words, in the statement that stops counting its fields
 * against their author. Nothing stays kept that no quota counts: without this, a save and delete
 * of a 1 MiB file with a 256 KiB header left 1.25 MiB a cycle in the database, counted nowhere.
 * Answers what each author gets back, by agent id.
 */
export async function letGoIndexedVersions(
  tx: Queryable,
  workspaceId: string,
  path: string,
): Promise<Map<string, number>> {
  const rows = await tx.query<{ author_id: string; bytes: number }>(
    // RETURNING sees the row as updated: the bytes given back are read from `counted`. Rows
    // already let go (kept_bytes 0: emptied by an earlier delete or by migration 041) are left.
    `with released as (
       update indexed_versions i
       set kept_bytes = 0, fields = '{}'::jsonb, body = '', search = ''::tsvector
       from (select version, kept_bytes from indexed_versions
             where workspace_id = $1 and path = $2 and kept_bytes > 0) counted
       where i.workspace_id = $1 and i.path = $2 and i.version = counted.version
       returning i.author_id, counted.kept_bytes
     )
     select author_id, sum(kept_bytes)::int8 as bytes from released group by author_id`,
    [workspaceId, path],
  );
  return new Map(rows.map((row) => [row.author_id, Number(row.bytes)]));
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
