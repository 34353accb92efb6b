import type { Queryable } from '../driver.ts';

export type Visibility = 'private' | 'public';
export type Role = 'owner' | 'member';

export interface WorkspaceRow {
  workspaceId: string;
  ownerAgentId: string;
  visibility: Visibility;
  name: string | null;
  createdAt: Date;
  version: number;
}

/**
 * SQL for a query of one column, `name`: the agent the SQL expression `agentId` names, and no
 * row for an id no agent has (storage/agents/agent-names.ts agentNameSql). Agents build on
 * workspaces, so it is given, not imported: the agents capability fills the port at start-up.
 */
export type AgentNameSql = (agentId: string) => string;

/**
 * SQL for a query of one value: how many of the workspace's messages from others the agent has
 * not read (after its read mark, kept from an earlier membership, if any), should it join now;
 * the two arguments are SQL expressions (storage/chat.ts unreadOnJoinSql). Chat builds on
 * workspaces, so it is given, not imported: chat fills the port at start-up.
 */
export type UnreadOnJoinSql = (workspaceId: string, agentId: string) => string;

export interface MemberRow {
  agentId: string;
  name: string;
  role: Role;
}

interface RawWorkspace extends Record<string, unknown> {
  workspace_id: string;
  owner_agent_id: string;
  visibility: Visibility;
  name: string | null;
  created_at: Date;
  version: number;
}

const toWorkspace = (raw: RawWorkspace): WorkspaceRow => ({
  workspaceId: raw.workspace_id,
  ownerAgentId: raw.owner_agent_id,
  visibility: raw.visibility,
  name: raw.name,
  createdAt: raw.created_at,
  version: raw.version,
});

/** Records a new workspace and its owner as its first member. */
export async function insertWorkspace(
  tx: Queryable,
  workspace: {
    workspaceId: string;
    ownerAgentId: string;
    visibility: Visibility;
    name: string | null;
  },
): Promise<void> {
  await tx.query(
    `insert into workspaces (workspace_id, owner_agent_id, visibility, name) values ($1, $2, $3, $4)`,
    [workspace.workspaceId, workspace.ownerAgentId, workspace.visibility, workspace.name],
  );
  // The owner joins a workspace made now: it holds no message yet, so none is unread.
  await tx.query(
    `insert into workspace_members (workspace_id, agent_id, role, unread_messages)
     values ($1, $2, 'owner', 0)`,
    [workspace.workspaceId, workspace.ownerAgentId],
  );
}

export async function insertMember(
  tx: Queryable,
  workspaceId: string,
  agentId: string,
  role: Role,
  unreadOnJoinSql: UnreadOnJoinSql,
): Promise<void> {
  // A member joins with the workspace's messages from others after its read mark (kept from
  // an earlier membership, if any) counted unread (migration 026).
  await tx.query(
    `insert into workspace_members (workspace_id, agent_id, role, unread_messages)
     values ($1, $2, $3, (${unreadOnJoinSql('$1', '$2')}))`,
    [workspaceId, agentId, role],
  );
}

export async function deleteMember(
  tx: Queryable,
  workspaceId: string,
  agentId: string,
): Promise<void> {
  await tx.query('delete from workspace_members where workspace_id = $1 and agent_id = $2', [
    workspaceId,
    agentId,
  ]);
}

/** The workspace with its members (oldest first), as a WorkspaceActor loads it. */
export async function findWorkspace(
  db: Queryable,
  workspaceId: string,
  agentNameSql: AgentNameSql,
): Promise<{ workspace: WorkspaceRow; members: MemberRow[] } | null> {
  const [raw] = await db.query<RawWorkspace>(
    `select workspace_id, owner_agent_id, visibility, name, created_at, version
     from workspaces where workspace_id = $1`,
    [workspaceId],
  );
  if (!raw) return null;
  const members = await db.query<{ agent_id: string; name: string; role: Role }>(
    `select m.agent_id, a.name, m.role from workspace_members m
     join lateral ${agentNameSql('m.agent_id')} a on true
     where m.workspace_id = $1 order by m.joined_at, m.agent_id`,
    [workspaceId],
  );
  return {
    workspace: toWorkspace(raw),
    members: members.map((m) => ({ agentId: m.agent_id, name: m.name, role: m.role })),
  };
}

/** Moves the workspace's version on if it is still `version`; its new version, or null. */
export async function bumpWorkspace(
  tx: Queryable,
  workspaceId: string,
  version: number,
): Promise<number | null> {
  const [row] = await tx.query<{ version: number }>(
    `update workspaces set version = version + 1 where workspace_id = $1 and version = $2
     returning version`,
    [workspaceId, version],
  );
  return row?.version ?? null;
}

/** The workspace row's version now, or null when there is none. */
export async function workspaceVersion(db: Queryable, workspaceId: string): Promise<number | null> {
  const [row] = await db.query<{ version: number }>(
    'select version from workspaces where workspace_id = $1',
    [workspaceId],
  );
  return row?.version ?? null;
}

export async function lockWorkspace(tx: Queryable, workspaceId: string): Promise<number | null> {
  const [row] = await tx.query<{ version: number }>(
    'select version from workspaces where workspace_id = $1 for update',
    [workspaceId],
  );
  return row?.version ?? null;
}

/** The agent's workspaces (owned and member), by id, after `afterId`. */
export async function listAgentWorkspaces(
  db: Queryable,
  agentId: string,
  afterId: string | null,
  limit: number,
): Promise<(WorkspaceRow & { role: Role })[]> {
  const rows = await db.query<RawWorkspace & { role: Role }>(
    `select w.workspace_id, w.owner_agent_id, w.visibility, w.name, w.created_at, w.version, m.role
     from workspace_members m join workspaces w using (workspace_id)
     where m.agent_id = $1 and ($2::uuid is null or w.workspace_id > $2::uuid)
     order by w.workspace_id limit $3`,
    [agentId, afterId, limit],
  );
  return rows.map((raw) => ({ ...toWorkspace(raw), role: raw.role }));
}
