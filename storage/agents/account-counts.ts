import type { Queryable } from '../driver.ts';
import { reservedBytesSql, stagedBytesSql, storageUsageSql } from '../files/account-usage.ts';
import { unreadMessagesOfSql } from '../workspaces/unread-messages.ts';

/**
 * SQL for a query of one row over the agent's pending knocks (`pending`, `first` expiry), from
 * chat (storage/chat.ts pendingKnocksToSql): chat builds on agents, so it is given, not imported.
 */
export type PendingKnocksSql = (agentId: string, now: string) => string;

/**
 * SQL for a query of one row of what presence shows in the account (`until`: when it must be
 * counted again, `shown`: the rest, as JSON), from presence (storage/presence/account.ts):
 * presence builds on agents, so it is given, not imported.
 */
export type AccountPresenceSql = (agentId: string, now: string) => string;

/** An agent's account figures as `whoami` shows them, and the first time one of them expires. */
export interface AccountCountsRow {
  kept: number;
  current: number;
  staged: number;
  reserved: number;
  unreadMessages: number;
  pendingKnocks: number;
  directKnocks: 'everyone' | 'nobody';
  /** What presence shows, as its SQL made it (AccountPresenceSql). */
  presence: unknown;
  /** The first expiry among what was counted (staged blocks, reservations, pending knocks). */
  firstExpiry: Date | null;
}

/**
 * Every figure in one statement, each from a kept count or an indexed set bounded by the
 * agent's own quota and knocks: storage use (storage_usage), staged blocks and upload
 * reservations not yet expired, unread messages (workspace_members.unread_messages, migration
 * 026), pending knocks to the agent, the agent's presence settings and responsiveness (kept,
 * migration 046). Null when there is no such agent.
 */
export async function readAccountCounts(
  db: Queryable,
  agentId: string,
  now: Date,
  pendingKnocksSql: PendingKnocksSql,
  accountPresenceSql: AccountPresenceSql,
): Promise<AccountCountsRow | null> {
  const [row] = await db.query<{
    kept: number;
    current: number;
    staged: number;
    reserved: number;
    unread_messages: number;
    pending_knocks: number;
    direct_knocks: 'everyone' | 'nobody';
    presence: unknown;
    first_expiry: Date | null;
  }>(
    `with staged as (${stagedBytesSql('$1', '$2')}
     ), reserved as (${reservedBytesSql('$1', '$2')}
     ), knocked as (${pendingKnocksSql('$1', '$2')}
     ), presence as (${accountPresenceSql('$1', '$2')}
     )
     select
       coalesce(u.used_bytes, 0)::int8 as kept,
       coalesce(u.current_bytes, 0)::int8 as current,
       staged.bytes as staged,
       reserved.bytes as reserved,
       ${unreadMessagesOfSql('$1')} as unread_messages,
       knocked.pending as pending_knocks,
       a.direct_knocks,
       presence.shown as presence,
       least(staged.first, reserved.first, knocked.first, presence.until) as first_expiry
     from agents a
     cross join staged cross join reserved cross join knocked cross join presence
     left join (${storageUsageSql()}) u on u.agent_id = a.agent_id
     where a.agent_id = $1`,
    [agentId, now],
  );
  if (!row) return null;
  return {
    kept: row.kept,
    current: row.current,
    staged: row.staged,
    reserved: row.reserved,
    unreadMessages: row.unread_messages,
    pendingKnocks: row.pending_knocks,
    directKnocks: row.direct_knocks,
    presence: row.presence,
    firstExpiry: row.first_expiry,
  };
}
