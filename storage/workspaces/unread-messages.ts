/**
 * The messages each member has not read, kept on its membership (`workspace_members.
 * unread_messages`, migration 026): chat counts them as messages are sent and read, in the
 * statement that sends or reads; the account shows their sum. Each function answers SQL to
 * compose into that statement; the arguments are SQL expressions.
 */

/** SQL statement (a CTE's body): one more unread message for every member but `senderId`. */
export function countUnreadForOthersSql(workspaceId: string, senderId: string): string {
  return `update workspace_members set unread_messages = unread_messages + 1
       where workspace_id = ${workspaceId} and agent_id <> ${senderId}`;
}

/** SQL statement: sets the member's unread messages to the scalar subquery `count`. */
export function setUnreadMessagesSql(workspaceId: string, agentId: string, count: string): string {
  return `update workspace_members set unread_messages = (${count})
     where workspace_id = ${workspaceId} and agent_id = ${agentId}`;
}

/** SQL scalar subquery: the agent's unread messages in all its workspaces (0 for none). */
export function unreadMessagesOfSql(agentId: string): string {
  return `(select coalesce(sum(unread_messages), 0)::int from workspace_members
         where agent_id = ${agentId})`;
}
