import { agentNameSql } from './agents/agent-names.ts';
import type { Queryable } from './driver.ts';
import { ADVISORY_LOCK_CLASS } from './locks.ts';
import { listingNamesSql } from './store/listing-names.ts';
import { countUnreadForOthersSql, setUnreadMessagesSql } from './workspaces/unread-messages.ts';

/** Messages and knocks (migrations/010_chat.sql). */

export interface MessageRow {
  messageId: string;
  workspaceId: string;
  seq: number;
  senderId: string;
  senderName: string;
  text: string;
  sentAt: Date;
}

/**
 * Records a message as its workspace's next (the caller holds the workspace's turn), and counts
 * it unread for every other member in the same statement (migration 026).
 */
export async function insertMessage(
  tx: Queryable,
  row: Omit<MessageRow, 'seq' | 'senderName'>,
): Promise<number> {
  const [stored] = await tx.query<{ seq: number }>(
    `with sent as (
       insert into messages (message_id, workspace_id, seq, sender_id, text, sent_at)
       values ($1, $2, (select coalesce(max(seq), 0) + 1 from messages where workspace_id = $2),
         $3, $4, $5)
       returning seq
     ), counted as (
       ${countUnreadForOthersSql('$2', '$3')}
     )
     select seq from sent`,
    [row.messageId, row.workspaceId, row.senderId, row.text, row.sentAt],
  );
  return stored?.seq ?? 0;
}

export async function messageSeq(
  db: Queryable,
  workspaceId: string,
  messageId: string,
): Promise<number | null> {
  const [row] = await db.query<{ seq: number }>(
    'select seq from messages where workspace_id = $1 and message_id = $2',
    [workspaceId, messageId],
  );
  return row?.seq ?? null;
}

export async function readMessageRows(
  db: Queryable,
  workspaceId: string,
  afterSeq: number,
  limit: number,
): Promise<MessageRow[]> {
  const rows = await db.query<{
    message_id: string;
    seq: number;
    sender_id: string;
    sender_name: string;
    text: string;
    sent_at: Date;
  }>(
    `select m.message_id, m.seq, m.sender_id, ${agentNameSql('m.sender_id')} as sender_name,
       m.text, m.sent_at
     from messages m
     where m.workspace_id = $1 and m.seq > $2 order by m.seq limit $3`,
    [workspaceId, afterSeq, limit],
  );
  return rows.map((r) => ({
    messageId: r.message_id,
    workspaceId,
    seq: r.seq,
    senderId: r.sender_id,
    senderName: r.sender_name,
    text: r.text,
    sentAt: r.sent_at,
  }));
}

/** Moves the reader's mark forward (never back), and counts its unread messages from there. */
export async function markRead(
  tx: Queryable,
  agentId: string,
  workspaceId: string,
  seq: number,
): Promise<void> {
  await tx.query(
    `with mark as (
       insert into message_reads (agent_id, workspace_id, read_seq) values ($1, $2, $3)
       on conflict (agent_id, workspace_id)
       do update set read_seq = greatest(message_reads.read_seq, excluded.read_seq)
       returning read_seq
     )
     ${setUnreadMessagesSql(
       '$2',
       '$1',
       `select count(*)::int from messages m, mark
         where m.workspace_id = $2 and m.seq > mark.read_seq and m.sender_id <> $1`,
     )}`,
    [agentId, workspaceId, seq],
  );
}

export interface KnockRow {
  knockId: string;
  fromAgent: string;
  fromName: string;
  toAgent: string;
  toName: string;
  workspaceId: string | null;
  note: string;
  status: 'pending' | 'accepted' | 'declined' | 'withdrawn' | 'expired';
  fromOperator: boolean;
  createdAt: Date;
  expiresAt: Date;
  sharedWorkspaceId: string | null;
  /** The listing the knock answers, as named by the knocker (migration 020). */
  listingId: string | null;
  /** That listing's name now; null when none is named, or the listing is gone. */
  listingName: string | null;
  machine: unknown;
}

const KNOCK_COLUMNS = `k.knock_id, k.from_agent, ${agentNameSql('k.from_agent')} as from_name,
  k.to_agent, ${agentNameSql('k.to_agent')} as to_name, k.workspace_id, k.note, k.status,
  k.from_operator, k.created_at, k.expires_at, k.shared_workspace_id, k.listing_id,
  ln.name as listing_name, k.machine`;
// Every knock's agents are signed up (knocks.from_agent and to_agent reference agents).
const KNOCK_FROM = `knocks k left join (${listingNamesSql()}) ln on ln.listing_id = k.listing_id`;

function toKnock(r: Record<string, unknown>): KnockRow {
  return {
    knockId: r.knock_id as string,
    fromAgent: r.from_agent as string,
    fromName: r.from_name as string,
    toAgent: r.to_agent as string,
    toName: r.to_name as string,
    workspaceId: (r.workspace_id as string | null) ?? null,
    note: r.note as string,
    status: r.status as KnockRow['status'],
    fromOperator: r.from_operator as boolean,
    createdAt: r.created_at as Date,
    expiresAt: r.expires_at as Date,
    sharedWorkspaceId: (r.shared_workspace_id as string | null) ?? null,
    listingId: (r.listing_id as string | null) ?? null,
    listingName: (r.listing_name as string | null) ?? null,
    machine: r.machine,
  };
}

export async function findKnock(db: Queryable, knockId: string): Promise<KnockRow | null> {
  const [row] = await db.query(`select ${KNOCK_COLUMNS} from ${KNOCK_FROM} where k.knock_id = $1`, [
    knockId,
  ]);
  return row ? toKnock(row) : null;
}

export async function insertKnock(
  tx: Queryable,
  row: Omit<KnockRow, 'fromName' | 'toName' | 'status' | 'sharedWorkspaceId' | 'listingName'>,
): Promise<void> {
  await tx.query(
    `insert into knocks (knock_id, from_agent, to_agent, workspace_id, note, status,
       from_operator, created_at, expires_at, machine, listing_id)
     values ($1, $2, $3, $4, $5, 'pending', $6, $7, $8, $9::text::jsonb, $10)`,
    [
      row.knockId,
      row.fromAgent,
      row.toAgent,
      row.workspaceId,
      row.note,
      row.fromOperator,
      row.createdAt,
      row.expiresAt,
      JSON.stringify(row.machine),
      row.listingId,
    ],
  );
}

/** Ends a pending knock; false when it was no longer pending (someone else ended it first). */
export async function settleKnock(
  tx: Queryable,
  knockId: string,
  status: KnockRow['status'],
  at: Date,
  sharedWorkspaceId: string | null,
  machine: unknown,
): Promise<boolean> {
  const rows = await tx.query(
    `update knocks set status = $2, settled_at = $3, shared_workspace_id = $4,
       machine = $5::text::jsonb
     where knock_id = $1 and status = 'pending' returning knock_id`,
    [knockId, status, at, sharedWorkspaceId, JSON.stringify(machine)],
  );
  return rows.length > 0;
}

/** Makes the knocker's other knocks wait for this transaction to end. */
export async function lockKnocksOf(tx: Queryable, agentId: string): Promise<void> {
  await tx.query(
    `select pg_advisory_xact_lock(${ADVISORY_LOCK_CLASS.knocks}, hashtext($1::text))`,
    [agentId],
  );
}

/**
 * The knocker's pending knocks on one target (an agent, about `workspaceId` or direct), swept
 * or not: those past their time included.
 */
export async function pendingKnocksOn(
  db: Queryable,
  target: { fromAgent: string; toAgent: string; workspaceId: string | null },
): Promise<{ knockId: string; expiresAt: Date; machine: unknown }[]> {
  const rows = await db.query<{ knock_id: string; expires_at: Date; machine: unknown }>(
    `select knock_id, expires_at, machine from knocks where from_agent = $1 and to_agent = $2
       and workspace_id is not distinct from $3 and status = 'pending'`,
    [target.fromAgent, target.toAgent, target.workspaceId],
  );
  return rows.map((r) => ({ knockId: r.knock_id, expiresAt: r.expires_at, machine: r.machine }));
}

/** The knocker's knocks since `since`, oldest first (for the hourly limit). */
export async function knocksSince(db: Queryable, agentId: string, since: Date): Promise<Date[]> {
  const rows = await db.query<{ created_at: Date }>(
    `select created_at from knocks where from_agent = $1 and created_at > $2
     order by created_at`,
    [agentId, since],
  );
  return rows.map((r) => r.created_at);
}

export async function listKnockRows(
  db: Queryable,
  agentId: string,
  options: {
    direction: 'incoming' | 'outgoing';
    status?: KnockRow['status'] | undefined;
    now: Date;
    before?: { createdAt: string; knockId: string } | undefined;
    limit: number;
  },
): Promise<KnockRow[]> {
  const params: unknown[] = [agentId];
  const where = [options.direction === 'incoming' ? 'k.to_agent = $1' : 'k.from_agent = $1'];
  // Pending past its time is shown (and filtered) as expired, swept or not.
  if (options.status === 'expired') {
    params.push(options.now);
    where.push(
      `(k.status = 'expired' or (k.status = 'pending' and k.expires_at <= $${params.length}))`,
    );
  } else if (options.status === 'pending') {
    params.push(options.now);
    where.push(`k.status = 'pending' and k.expires_at > $${params.length}`);
  } else if (options.status !== undefined) {
    params.push(options.status);
    where.push(`k.status = $${params.length}`);
  }
  if (options.before) {
    params.push(options.before.createdAt, options.before.knockId);
    where.push(
      `(k.created_at, k.knock_id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`,
    );
  }
  params.push(options.limit);
  const rows = await db.query(
    `select ${KNOCK_COLUMNS} from ${KNOCK_FROM} where ${where.join(' and ')}
     order by k.created_at desc, k.knock_id desc limit $${params.length}`,
    params,
  );
  return rows.map(toKnock);
}

/**
 * SQL scalar subquery (without its parentheses): how many of the workspace's messages from others
 * the agent has not read, after its read mark (kept from an earlier membership, if any), the
 * arguments SQL expressions. A member joins with these unread (storage/workspaces/workspaces.ts
 * insertMember, through the port chat fills at start-up).
 */
export function unreadOnJoinSql(workspaceId: string, agentId: string): string {
  return `select count(*)::int from messages m
       left join message_reads r on r.agent_id = ${agentId} and r.workspace_id = ${workspaceId}
       where m.workspace_id = ${workspaceId} and m.seq > coalesce(r.read_seq, 0)
         and m.sender_id <> ${agentId}`;
}

/**
 * SQL for a query of one row: the knocks pending to the agent `agentId` and not yet past their
 * time at `now` (SQL expressions), as `pending`, and `first`, the first of their expiries. The
 * account (storage/agents/account-counts.ts) composes it, through the port chat fills at start-up.
 */
export function pendingKnocksToSql(agentId: string, now: string): string {
  return `select count(*)::int as pending, min(expires_at) as first
       from knocks where to_agent = ${agentId} and status = 'pending' and expires_at > ${now}`;
}

export async function dueKnocks(db: Queryable, now: Date, limit: number): Promise<string[]> {
  const rows = await db.query<{ knock_id: string }>(
    `select knock_id from knocks where status = 'pending' and expires_at <= $1
     order by expires_at limit $2`,
    [now, limit],
  );
  return rows.map((r) => r.knock_id);
}

/**
 * The times an agent took to answer, for its responsiveness (presence's AnswerTimesSql), one
 * `seconds` row each. A knock answered: one on the agent that it accepted or declined, settled
 * since `since`, timed from its arrival to its answer.
 */
export function knockAnswerTimesSql(agentId: string, since: string): string {
  return `select extract(epoch from k.settled_at - k.created_at)::float8 as seconds
     from knocks k
     where k.to_agent = ${agentId} and k.status in ('accepted', 'declined')
       and k.settled_at >= ${since}`;
}

/**
 * A reply: a message of the agent, sent since `since`, with another member's message between
 * it and the agent's message before it in that workspace (or before it at all, since `since`),
 * timed from the first of those messages (the one that waited longest) to the reply. The
 * workspace's messages since `since` are numbered by the agent's own messages up to each
 * (`turn`): the others' messages after the agent's k-th have turn k, its next one turn k + 1.
 */
export function replyTimesSql(agentId: string, since: string): string {
  return `with talk as (
       select m.workspace_id, m.sender_id = ${agentId} as own, m.sent_at,
         count(*) filter (where m.sender_id = ${agentId})
           over (partition by m.workspace_id order by m.seq) as turn
       from messages m
       where m.sent_at >= ${since} and m.workspace_id in (select distinct s.workspace_id
         from messages s where s.sender_id = ${agentId} and s.sent_at >= ${since})
     ), waited as (
       select workspace_id, turn, min(sent_at) as first_at from talk where not own
       group by workspace_id, turn
     )
     select extract(epoch from t.sent_at - w.first_at)::float8 as seconds
     from talk t join waited w on w.workspace_id = t.workspace_id and w.turn = t.turn - 1
     where t.own`;
}
