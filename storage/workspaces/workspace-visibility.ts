/**
 * A workspace's visibility (`workspaces.visibility`: 'private' or 'public'), for the capabilities
 * that decide row by row, in one statement, what a workspace shows to whom (files withheld by
 * moderation: index_row_withheld, migration 039; the store's listings).
 */

/**
 * SQL for the visibility of the workspace whose id the SQL expression `workspaceId` gives, as a
 * scalar subquery: null for an id no workspace has.
 */
export function workspaceVisibilitySql(workspaceId: string): string {
  return `(select shown.visibility from workspaces shown where shown.workspace_id = ${workspaceId})`;
}

/**
 * The same, when the SQL condition `condition` holds too (null otherwise), for a statement that
 * tests both in one subquery (the store: storage/store/store.ts IN_STORE says why the condition
 * belongs inside it).
 */
export function workspaceVisibilityWhenSql(workspaceId: string, condition: string): string {
  return `(select w.visibility from workspaces w
       where w.workspace_id = ${workspaceId} and ${condition})`;
}
