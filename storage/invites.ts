import type { Queryable } from './driver.ts';

export type InviteStatusRow = 'pending' | 'joined' | 'expired' | 'revoked';

export interface InviteRow {
  inviteId: string;
  workspaceId: string;
  createdBy: string;
  createdAt: Date;
  expiresAt: Date;
  status: InviteStatusRow;
  joinedAgentId: string | null;
  machine: unknown;
}

interface Raw extends Record<string, unknown> {
  invite_id: string;
  workspace_id: string;
  created_by: string;
  created_at: Date;
  expires_at: Date;
  status: InviteStatusRow;
  joined_agent_id: string | null;
  machine: unknown;
}

const columns =
  'invite_id, workspace_id, created_by, created_at, expires_at, status, joined_agent_id, machine';

const toRow = (raw: Raw): InviteRow => ({
  inviteId: raw.invite_id,
  workspaceId: raw.workspace_id,
  createdBy: raw.created_by,
  createdAt: raw.created_at,
  expiresAt: raw.expires_at,
  status: raw.status,
  joinedAgentId: raw.joined_agent_id,
  machine: raw.machine,
});

export async function insertInvite(
  tx: Queryable,
  invite: Omit<InviteRow, 'joinedAgentId' | 'status'> & { tokenHash: Uint8Array },
): Promise<void> {
  await tx.query(
    `insert into invites (invite_id, workspace_id, token_hash, created_by, created_at, expires_at,
       status, machine)
     values ($1, $2, $3, $4, $5, $6, 'pending', $7::text::jsonb)`,
    [
      invite.inviteId,
      invite.workspaceId,
      invite.tokenHash,
      invite.createdBy,
      invite.createdAt,
      invite.expiresAt,
      JSON.stringify(invite.machine),
    ],
  );
}

/** The invite a token opens (by the token's SHA-256), or null. */
export async function findInviteByTokenHash(
  db: Queryable,
  tokenHash: Uint8Array,
): Promise<InviteRow | null> {
  const [raw] = await db.query<Raw>(`select ${columns} from invites where token_hash = $1`, [
    tokenHash,
  ]);
  return raw ? toRow(raw) : null;
}

export async function findInvite(db: Queryable, inviteId: string): Promise<InviteRow | null> {
  const [raw] = await db.query<Raw>(`select ${columns} from invites where invite_id = $1`, [
    inviteId,
  ]);
  return raw ? toRow(raw) : null;
}

/** Writes the invite's new state; only from `pending` (an invite ends once). False if it had. */
export async function settleInvite(
  tx: Queryable,
  inviteId: string,
  status: 'joined' | 'expired' | 'revoked',
  joinedAgentId: string | null,
  machine: unknown,
): Promise<boolean> {
  const rows = await tx.query(
    `update invites set status = $2, joined_agent_id = $3, machine = $4::text::jsonb
     where invite_id = $1 and status = 'pending' returning invite_id`,
    [inviteId, status, joinedAgentId, JSON.stringify(machine)],
  );
  return rows.length > 0;
}

/** A workspace's invites, newest first, after the (created_at, invite_id) of `after`. */
export async function listInvites(
  db: Queryable,
  workspaceId: string,
  after: { createdAt: Date; inviteId: string } | null,
  limit: number,
): Promise<InviteRow[]> {
  const rows = await db.query<Raw>(
    `select ${columns} from invites
     where workspace_id = $1
       and ($2::timestamptz is null or (created_at, invite_id) < ($2::timestamptz, $3::uuid))
     order by created_at desc, invite_id desc limit $4`,
    [workspaceId, after?.createdAt ?? null, after?.inviteId ?? null, limit],
  );
  return rows.map(toRow);
}

/** Pending invites whose time has come, oldest expiry first: for the expiry job. */
export async function duePendingInvites(
  db: Queryable,
  now: Date,
  limit: number,
): Promise<{ inviteId: string; workspaceId: string }[]> {
  const rows = await db.query<{ invite_id: string; workspace_id: string }>(
    `select invite_id, workspace_id from invites where status = 'pending' and expires_at <= $1
     order by expires_at limit $2`,
    [now, limit],
  );
  return rows.map((row) => ({ inviteId: row.invite_id, workspaceId: row.workspace_id }));
}

/** The pending invites one agent made to a workspace (they die when it leaves or is removed). */
export async function pendingInvitesBy(
  db: Queryable,
  workspaceId: string,
  agentId: string,
): Promise<InviteRow[]> {
  const rows = await db.query<Raw>(
    `select ${columns} from invites
     where workspace_id = $1 and created_by = $2 and status = 'pending'`,
    [workspaceId, agentId],
  );
  return rows.map(toRow);
}
