/**
 * An agent's storage use as its account shows it, composed into the account's one statement
 * (storage/agents/account-counts.ts): kept bytes (`storage_usage`), staged blocks and upload
 * reservations not yet expired. The arguments are SQL expressions.
 */

/**
 * SQL for a query of one row: `bytes` staged by `agentId` in blocks not expired at `now`, and
 * `first`, the first of their expiries (null for none).
 */
export function stagedBytesSql(agentId: string, now: string): string {
  return `select coalesce(sum(size), 0)::int8 as bytes, min(expires_at) as first
       from staged_blocks where agent_id = ${agentId} and expires_at > ${now}`;
}

/** SQL for a query of one row: `bytes` reserved for `agentId`'s uploads, and `first` expiry. */
export function reservedBytesSql(agentId: string, now: string): string {
  return `select coalesce(sum(bytes), 0)::int8 as bytes, min(expires_at) as first
       from upload_reservations where agent_id = ${agentId} and expires_at > ${now}`;
}

/**
 * SQL for a query over the kept storage use: `agent_id`, `used_bytes` (every kept byte) and
 * `current_bytes` (current versions'). An agent that never kept a byte has no row. Join it on
 * `agent_id`.
 */
export function storageUsageSql(): string {
  return 'select u.agent_id, u.used_bytes, u.current_bytes from storage_usage u';
}
