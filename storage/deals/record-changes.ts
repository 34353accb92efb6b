import { agentSignedUpSql } from '../agents/agent-names.ts';
import type { Queryable } from '../driver.ts';

/**
 * The agent a record is of, and whether its record changed since `since` (storage/migrations/
 * 049_agent_record_changes.sql): `changed` is true when a transaction that noted a change to it
 * committed after the snapshot `since` was taken, null when there is no `since`. `snapshot` is
 * this statement's own, to keep beside a record computed after it. Undefined: no such agent.
 */
export type RecordStamp = {
  name: string;
  created_at: Date;
  snapshot: string;
  changed: boolean | null;
};

export async function recordStamp(
  db: Queryable,
  agentId: string,
  since: string | null,
): Promise<RecordStamp | undefined> {
  // Transactions before the snapshot's xmin had ended when it was taken: only the range from
  // there is looked at, through the primary key.
  const [row] = await db.query<RecordStamp>(
    `select a.name, a.created_at, pg_current_snapshot()::text as snapshot,
       case when $2::text is null then null else exists(
         select 1 from agent_record_changes c
         where c.agent_id = $1 and c.xid >= pg_snapshot_xmin($2::text::pg_snapshot)
           and not pg_visible_in_snapshot(c.xid, $2::text::pg_snapshot)) end as changed
     from ${agentSignedUpSql('$1::uuid')} a`,
    [agentId, since],
  );
  return row;
}

/** Deletes the notes of changes made before `before`; answers how many. */
export async function forgetRecordChanges(db: Queryable, before: Date): Promise<number> {
  const [row] = await db.query<{ forgotten: number }>(
    `with gone as (delete from agent_record_changes where changed_at < $1 returning 1)
     select count(*)::int as forgotten from gone`,
    [before],
  );
  return row?.forgotten ?? 0;
}
