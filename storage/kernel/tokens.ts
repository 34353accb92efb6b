import type { Queryable } from '../driver.ts';

/** One API token as stored: never the token itself, only its SHA-256. */
export interface TokenRow {
  tokenId: string;
  agentId: string;
  tokenHash: Uint8Array;
  name: string;
  /** Empty: the agent's full access. */
  scopes: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
  revokedReason: string | null;
  /** A restricted token's own place in its agent's feed; null for full tokens. */
  readSeq: number | null;
}

/** Why a token stopped before its time. */
export type RevokedReason = 'revoked' | 'rotated' | 'leaked' | 'operator' | 'replaced';

/** Where a leaked token was found, as `token.revoked` names it. */
export interface FoundWhere {
  kind: 'file' | 'listing' | 'message' | 'feedback';
  workspace_id?: string;
  path?: string;
  listing_id?: string;
  message_id?: string;
  feedback_id?: string;
}

interface Raw extends Record<string, unknown> {
  token_id: string;
  agent_id: string;
  token_hash: Uint8Array;
  name: string;
  scopes: string[];
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  revoked_reason: string | null;
  read_seq: number | string | null;
}

const columns =
  'token_id, agent_id, token_hash, name, scopes, created_at, last_used_at, expires_at, revoked_at, revoked_reason, read_seq';

const toRow = (raw: Raw): TokenRow => ({
  tokenId: raw.token_id,
  agentId: raw.agent_id,
  tokenHash: raw.token_hash,
  name: raw.name,
  scopes: raw.scopes,
  createdAt: raw.created_at,
  lastUsedAt: raw.last_used_at,
  expiresAt: raw.expires_at,
  revokedAt: raw.revoked_at,
  revokedReason: raw.revoked_reason,
  readSeq: raw.read_seq === null ? null : Number(raw.read_seq),
});

export async function insertToken(
  tx: Queryable,
  token: {
    tokenId: string;
    agentId: string;
    tokenHash: Uint8Array;
    name: string;
    scopes: readonly string[];
    createdAt: Date;
    expiresAt: Date | null;
    /** A restricted token keeps its own place in the feed, from the newest change now. */
    restricted: boolean;
  },
): Promise<TokenRow> {
  const [raw] = await tx.query<Raw>(
    `insert into agent_tokens (token_id, agent_id, token_hash, name, scopes, created_at, expires_at, read_seq)
     values ($1, $2, $3, $4, $5::text[], $6, $7,
             case when $8::boolean then (select last_seq from feed_heads where agent_id = $2) end)
     returning ${columns}`,
    [
      token.tokenId,
      token.agentId,
      token.tokenHash,
      token.name,
      token.scopes,
      token.createdAt,
      token.expiresAt,
      token.restricted,
    ],
  );
  return toRow(raw as Raw);
}

/** A token row with whether its agent is suspended, as the token look-ups answer it. */
export type FoundToken = TokenRow & { agentSuspended: boolean };

/**
 * The token with this hash, revoked and expired ones included (the caller says which it is),
 * with whether its agent is suspended.
 */
export function findTokenByHash(db: Queryable, tokenHash: Uint8Array): Promise<FoundToken | null> {
  return findTokenWhere(db, 't.token_hash = $1', tokenHash);
}

/** The token with this id, as findTokenByHash answers it (a storage link names its maker so). */
export function findTokenById(db: Queryable, tokenId: string): Promise<FoundToken | null> {
  return findTokenWhere(db, 't.token_id = $1', tokenId);
}

async function findTokenWhere(
  db: Queryable,
  condition: 't.token_hash = $1' | 't.token_id = $1',
  value: Uint8Array | string,
): Promise<FoundToken | null> {
  const [raw] = await db.query<Raw & { suspended: boolean }>(
    `select t.${columns.split(', ').join(', t.')}, a.suspended_at is not null as suspended
     from agent_tokens t join agents a using (agent_id) where ${condition}`,
    [value],
  );
  return raw ? { ...toRow(raw), agentSuspended: raw.suspended } : null;
}

export async function findToken(
  db: Queryable,
  agentId: string,
  tokenId: string,
): Promise<TokenRow | null> {
  const [raw] = await db.query<Raw>(
    `select ${columns} from agent_tokens where agent_id = $1 and token_id = $2`,
    [agentId, tokenId],
  );
  return raw ? toRow(raw) : null;
}

/** The agent's tokens neither revoked nor expired at `now`, oldest first. */
export async function listLiveTokens(
  db: Queryable,
  agentId: string,
  now: Date,
): Promise<TokenRow[]> {
  const rows = await db.query<Raw>(
    `select ${columns} from agent_tokens
     where agent_id = $1 and revoked_at is null and (expires_at is null or expires_at > $2)
     order by created_at, token_id`,
    [agentId, now],
  );
  return rows.map(toRow);
}

export async function countLiveTokens(db: Queryable, agentId: string, now: Date): Promise<number> {
  const [row] = await db.query<{ n: number | string }>(
    `select count(*) as n from agent_tokens
     where agent_id = $1 and revoked_at is null and (expires_at is null or expires_at > $2)`,
    [agentId, now],
  );
  return Number(row?.n ?? 0);
}

/**
 * Revokes a live token; the row as revoked, or null when it was already revoked (or is not
 * the agent's). `where` says where a leaked token was found.
 */
export async function revokeToken(
  tx: Queryable,
  agentId: string,
  tokenId: string,
  at: Date,
  reason: RevokedReason,
  where: FoundWhere | null = null,
): Promise<TokenRow | null> {
  const [raw] = await tx.query<Raw>(
    `update agent_tokens set revoked_at = $3, revoked_reason = $4, revoked_where = $5::text::jsonb
     where agent_id = $1 and token_id = $2 and revoked_at is null returning ${columns}`,
    [agentId, tokenId, at, reason, where === null ? null : JSON.stringify(where)],
  );
  return raw ? toRow(raw) : null;
}

/** Moves a token's expiry earlier (never later): a rotated token's grace. */
export async function shortenTokenExpiry(tx: Queryable, tokenId: string, at: Date): Promise<void> {
  await tx.query(
    `update agent_tokens set expires_at = least(coalesce(expires_at, $2), $2)
     where token_id = $1`,
    [tokenId, at],
  );
}

/** Notes a use of the token (callers do it at most once a minute per token). */
export async function touchToken(db: Queryable, tokenId: string, at: Date): Promise<void> {
  await db.query('update agent_tokens set last_used_at = $2 where token_id = $1', [tokenId, at]);
}

/** The live tokens among these hashes (what the leak scanner found), with their agents. */
export async function findLiveTokensByHashes(
  db: Queryable,
  hashes: readonly Uint8Array[],
  now: Date,
): Promise<TokenRow[]> {
  if (hashes.length === 0) return [];
  const rows = await db.query<Raw>(
    `select ${columns} from agent_tokens
     where token_hash = any(array(select decode(h, 'hex') from unnest($1::text[]) as h))
       and revoked_at is null and (expires_at is null or expires_at > $2)`,
    // As hex text: postgres.js sends an array of Buffers as one bytea, not a bytea[].
    [hashes.map((hash) => Buffer.from(hash).toString('hex')), now],
  );
  return rows.map(toRow);
}

/** A restricted token's place in its agent's feed moves on to `seq` (never back). */
export async function moveTokenReadSeq(
  db: Queryable,
  tokenId: string,
  seq: number,
): Promise<number> {
  const [row] = await db.query<{ read_seq: number | string }>(
    `update agent_tokens set read_seq = greatest(coalesce(read_seq, 0), $2)
     where token_id = $1 returning read_seq`,
    [tokenId, seq],
  );
  return Number(row?.read_seq ?? seq);
}

export async function tokenReadSeq(db: Queryable, tokenId: string): Promise<number> {
  const [row] = await db.query<{ read_seq: number | string | null }>(
    'select read_seq from agent_tokens where token_id = $1',
    [tokenId],
  );
  return Number(row?.read_seq ?? 0);
}

/**
 * The operator's configured token (OPERATOR_TOKEN), kept as its token named so: a different
 * configured token replaces the one before it. A configured token that was revoked (found
 * leaked, say) is not brought back by a restart: the answer says so, for the start-up log.
 */
export async function setOperatorToken(
  tx: Queryable,
  operatorId: string,
  tokenHash: Uint8Array,
  tokenId: string,
  at: Date,
): Promise<'kept' | 'set' | 'revoked'> {
  const [known] = await tx.query<{ revoked: boolean }>(
    `select revoked_at is not null as revoked from agent_tokens where token_hash = $1`,
    [tokenHash],
  );
  if (known) return known.revoked ? 'revoked' : 'kept';
  await tx.query(
    `update agent_tokens set revoked_at = $2, revoked_reason = 'replaced'
     where agent_id = $1 and name = 'OPERATOR_TOKEN' and revoked_at is null`,
    [operatorId, at],
  );
  await tx.query(
    `insert into agent_tokens (token_id, agent_id, token_hash, name, created_at)
     values ($1, $2, $3, 'OPERATOR_TOKEN', $4)`,
    [tokenId, operatorId, tokenHash, at],
  );
  return 'set';
}
