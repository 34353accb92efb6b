import type { Queryable } from '../driver.ts';

/** One public signing key of an agent, as stored (migration 048). */
export interface AgentKeyRow {
  keyId: string;
  agentId: string;
  /** The raw 32-byte Ed25519 public key. */
  publicKey: Uint8Array;
  name: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

interface Raw extends Record<string, unknown> {
  key_id: string;
  agent_id: string;
  public_key: Uint8Array;
  name: string | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const columns = 'key_id, agent_id, public_key, name, created_at, last_used_at, revoked_at';

const toRow = (raw: Raw): AgentKeyRow => ({
  keyId: raw.key_id,
  agentId: raw.agent_id,
  publicKey: raw.public_key,
  name: raw.name,
  createdAt: raw.created_at,
  lastUsedAt: raw.last_used_at,
  revokedAt: raw.revoked_at,
});

/** Adds a key; null when the key is live already (for this agent or another). */
export async function insertKey(
  tx: Queryable,
  key: {
    keyId: string;
    agentId: string;
    publicKey: Uint8Array;
    name: string | null;
    createdAt: Date;
  },
): Promise<AgentKeyRow | null> {
  const [raw] = await tx.query<Raw>(
    `insert into agent_keys (key_id, agent_id, public_key, name, created_at)
     select $1, $2, $3, $4, $5
     where not exists (select 1 from agent_keys where key_id = $1 and revoked_at is null)
     on conflict (agent_id, key_id) do update
       set public_key = excluded.public_key, name = excluded.name,
           created_at = excluded.created_at, last_used_at = null, revoked_at = null
       where agent_keys.revoked_at is not null
     returning ${columns}`,
    [key.keyId, key.agentId, key.publicKey, key.name, key.createdAt],
  );
  return raw ? toRow(raw) : null;
}

export async function countLiveKeys(db: Queryable, agentId: string): Promise<number> {
  const [row] = await db.query<{ n: number | string }>(
    'select count(*)::int as n from agent_keys where agent_id = $1 and revoked_at is null',
    [agentId],
  );
  return Number(row?.n ?? 0);
}

/** The agent's live keys, oldest first. */
export async function listLiveKeys(db: Queryable, agentId: string): Promise<AgentKeyRow[]> {
  const rows = await db.query<Raw>(
    `select ${columns} from agent_keys where agent_id = $1 and revoked_at is null
     order by created_at, key_id`,
    [agentId],
  );
  return rows.map(toRow);
}

/** A key row with whether its agent is suspended, as the signature check reads it. */
export type FoundKey = AgentKeyRow & { agentSuspended: boolean };

/**
 * The key a signature names: the live one with this id, else the newest revoked one (so that
 * the refusal can say it was revoked); null when no agent ever added it.
 */
export async function findKey(db: Queryable, keyId: string): Promise<FoundKey | null> {
  const [raw] = await db.query<Raw & { suspended: boolean }>(
    `select k.key_id, k.agent_id, k.public_key, k.name, k.created_at, k.last_used_at,
            k.revoked_at, a.suspended_at is not null as suspended
     from agent_keys k join agents a using (agent_id) where k.key_id = $1
     order by k.revoked_at is null desc, k.revoked_at desc limit 1`,
    [keyId],
  );
  return raw ? { ...toRow(raw), agentSuspended: raw.suspended } : null;
}

/** Revokes the agent's live key; false when it has no such live key. */
export async function revokeKeyRow(
  tx: Queryable,
  agentId: string,
  keyId: string,
  at: Date,
): Promise<boolean> {
  const rows = await tx.query(
    `update agent_keys set revoked_at = $3
     where agent_id = $1 and key_id = $2 and revoked_at is null returning key_id`,
    [agentId, keyId, at],
  );
  return rows.length > 0;
}

/** Notes a key's use (to the minute: the caller writes at most once a minute per key). */
export async function touchKey(db: Queryable, keyId: string, at: Date): Promise<void> {
  await db.query(
    `update agent_keys set last_used_at = date_trunc('minute', $2::timestamptz)
     where key_id = $1 and revoked_at is null`,
    [keyId, at],
  );
}

/**
 * Takes a signature's nonce for its key: true the first time, false when it was taken already
 * and has not expired (a replay). One statement, so that two processes cannot both take it.
 */
export async function claimNonce(
  db: Queryable,
  keyId: string,
  nonce: string,
  expiresAt: Date,
  now: Date,
): Promise<boolean> {
  const rows = await db.query(
    `insert into signature_nonces (key_id, nonce, expires_at) values ($1, $2, $3)
     on conflict (key_id, nonce) do update set expires_at = excluded.expires_at
       where signature_nonces.expires_at <= $4
     returning 1 as taken`,
    [keyId, nonce, expiresAt, now],
  );
  return rows.length > 0;
}

/** Forgets the nonces whose signatures can no longer be accepted; answers how many. */
export async function deleteExpiredNonces(db: Queryable, now: Date): Promise<number> {
  const rows = await db.query('delete from signature_nonces where expires_at <= $1 returning 1', [
    now,
  ]);
  return rows.length;
}
