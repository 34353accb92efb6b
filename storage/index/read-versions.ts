/**
 * Which versions of files the index read (it keeps a row of each in `indexed_versions`, migration
 * 007), for the files capability's rule `every_kept_byte`: a version the index did not read keeps
 * its bytes only while it is current.
 */

/**
 * SQL true when the index read the version the three SQL expressions name (it has its row, let go
 * or not), false when it did not.
 */
export function versionIsIndexedSql(version: {
  workspaceId: string;
  path: string;
  version: string;
}): string {
  return `exists (select 1 from indexed_versions indexed
    where indexed.workspace_id = ${version.workspaceId} and indexed.path = ${version.path}
      and indexed.version = ${version.version})`;
}
