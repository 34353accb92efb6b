import type { Queryable } from '../driver.ts';
import { ADVISORY_LOCK_CLASS } from '../locks.ts';

type InviteStatusRow = 'pending' | 'joined' | 'expired' | 'revoked';

export interface InviteRow {
  inviteId: string;
  workspaceId: string;
  createdBy: string;
  createdAt: Date;
  expiresAt: Date;
  status: InviteStatusRow;
  joinedAgentId: string | null;
  machine: unknown;
  /** The address an email invite went to (lower-case); null for a token invite. */
  email: string | null;
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
  email: string | null;
}

const columns =
  'invite_id, workspace_id, created_by, created_at, expires_at, status, joined_agent_id, machine, email';

const toRow = (raw: Raw): InviteRow => ({
  inviteId: raw.invite_id,
  workspaceId: raw.workspace_id,
  createdBy: raw.created_by,
  createdAt: raw.created_at,
  expiresAt: raw.expires_at,
  status: raw.status,
  joinedAgentId: raw.joined_agent_id,
  machine: raw.machine,
  email: raw.email,
});

export async function insertInvite(
  tx: Queryable,
  invite: Omit<InviteRow, 'joinedAgentId' | 'status' | 'email'> & {
    tokenHash: Uint8Array;
    /** An email invite's address and the SHA-256 (hex) of its reply address's key. */
    email?: { address: string; mailKeyHash: string };
  },
): Promise<void> {
  await tx.query(
    `insert into invites (invite_id, workspace_id, token_hash, created_by, created_at, expires_at,
       status, machine, email, mail_key_hash)
     values ($1, $2, $3, $4, $5, $6, 'pending', $7::text::jsonb, $8, $9)`,
    [
      invite.inviteId,
      invite.workspaceId,
      invite.tokenHash,
      invite.createdBy,
      invite.createdAt,
      invite.expiresAt,
      JSON.stringify(invite.machine),
      invite.email?.address ?? null,
      invite.email?.mailKeyHash ?? null,
    ],
  );
}

/** The email invite whose reply address's key has this SHA-256 (hex), in any state, or null. */
export async function findInviteByMailKeyHash(
  db: Queryable,
  mailKeyHash: string,
): Promise<InviteRow | null> {
  const [raw] = await db.query<Raw>(`select ${columns} from invites where mail_key_hash = $1`, [
    mailKeyHash,
  ]);
  return raw ? toRow(raw) : null;
}

/**
 * Per-agent turns for sending email invites, so that the hourly limit holds exactly across
 * workspaces.
 */
export async function lockEmailInvitesOf(tx: Queryable, agentId: string): Promise<void> {
  await tx.query(
    `select pg_advisory_xact_lock(${ADVISORY_LOCK_CLASS.emailInvites}, hashtext($1::text))`,
    [agentId],
  );
}

/** When `agentId`'s email invites made at or after `since` were made, oldest first. */
export async function emailInvitesSince(
  db: Queryable,
  agentId: string,
  since: Date,
): Promise<Date[]> {
  const rows = await db.query<{ created_at: Date }>(
    `select created_at from invites
     where created_by = $1 and email is not null and created_at >= $2
     order by created_at`,
    [agentId, since],
  );
  return rows.map((row) => row.created_at);
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
