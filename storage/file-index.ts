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

export async function insertIndexedVersion(tx: Queryable, row: IndexedVersion): Promise<void> {
  await tx.query(
    `insert into indexed_versions (workspace_id, path, version, sha256, author_id, saved_at,
       visibility, convention, fields, body)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9::text::jsonb, $10)`,
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
    ],
  );
}
