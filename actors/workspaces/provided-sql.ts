import type { UnreadOnJoinSql } from '../../storage/workspaces/workspaces.ts';

/**
 * What workspaces read of the capabilities built on them, in their own statements: chat builds
 * on workspaces (a message is a workspace's), so workspaces import nothing of it. Chat fills the
 * port at start-up (`services.provide`) with the SQL its storage exports for it. Members are
 * named through the agents' port, `services.agentNameSql` (actors/files/provided-sql.ts).
 */
declare module '../kernel/services.ts' {
  interface Services {
    /** The messages a member joins with unread: chat's unreadOnJoinSql. */
    readonly unreadOnJoinSql: UnreadOnJoinSql;
  }
}
