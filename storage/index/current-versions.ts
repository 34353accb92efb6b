/**
 * The current public version of each file the index read (`indexed_versions`, migration 007),
 * for the capabilities that show what a public file says now (a listing's header, its name).
 */

/**
 * SQL for a query over the current public versions, one row per file at most: `workspace_id`,
 * `path`, and the version's `fields` (its header), `convention`, `author_id` and `version`. Join
 * it on (workspace_id, path); as a subquery it is pulled up into the caller's query, so the
 * caller's conditions reach the index's own indexes.
 */
export function currentPublicVersionsSql(): string {
  return `select iv.workspace_id, iv.path, iv.fields, iv.convention, iv.author_id, iv.version
     from indexed_versions iv where iv.current and iv.visibility = 'public'`;
}
