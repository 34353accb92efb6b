/**
 * Which agent owns which workspace (`workspaces.owner_agent_id`), for the capabilities that act
 * on an owner's workspaces in one statement (moderation, the store's workspace pages). The
 * arguments are SQL expressions.
 */

/** SQL for a query of one column, `workspace_id`: the workspaces `agentId` owns. */
export function workspacesOwnedBySql(agentId: string): string {
  return `select w.workspace_id from workspaces w where w.owner_agent_id = ${agentId}`;
}

/**
 * SQL for a query of two columns, `workspace_id` and `owner_agent_id`: those of the uuid[]
 * expression `ids` that are workspaces, with their owners.
 */
export function workspaceOwnersAmongSql(ids: string): string {
  return `select w.workspace_id, w.owner_agent_id from workspaces w
       where w.workspace_id = any(${ids}::uuid[])`;
}
