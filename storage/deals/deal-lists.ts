import type { Queryable } from '../driver.ts';
import { versionHeaderSql } from '../index/version-headers.ts';
import type { DealRow } from './deals.ts';

/** One line of an agent's list of deals. */
export interface DealListRow {
  dealId: string;
  workspaceId: string;
  path: string;
  status: DealRow['status'];
  createdAt: Date;
  agreedVersion: number | null;
  title: string | null;
}

/** The header of a deal's version agreed (in a draft, of the version being agreed). */
const TITLE_HEADER = versionHeaderSql({
  workspaceId: 'd.workspace_id',
  path: 'd.path',
  version: `coalesce((d.machine #>> '{context,agreed,version}')::int,
                     (d.machine #>> '{context,round,version}')::int)`,
});

/**
 * The deals `agentId` agreed to or is a party of, newest first, from after `after`; `title` is
 * the header's `deal` of what was agreed (in a draft, of the version being agreed).
 */
export async function listDealsOf(
  db: Queryable,
  agentId: string,
  status: DealRow['status'] | null,
  after: { at: Date; dealId: string } | null,
  limit: number,
): Promise<DealListRow[]> {
  const rows = await db.query<{
    deal_id: string;
    workspace_id: string;
    path: string;
    status: DealRow['status'];
    created_at: Date;
    agreed_version: number | null;
    title: string | null;
  }>(
    `select d.deal_id, d.workspace_id, d.path, d.status, d.created_at,
            (d.machine #>> '{context,agreed,version}')::int as agreed_version,
            v.fields ->> 'deal' as title
     from deals d
     left join lateral ${TITLE_HEADER} v on true
     where d.deal_id in (select deal_id from deal_parties where agent_id = $1
                         union select deal_id from deal_agreements where agent_id = $1)
       and ($2::text is null or d.status = $2::text)
       and ($3::timestamptz is null or (d.created_at, d.deal_id) < ($3::timestamptz, $4::uuid))
     order by d.created_at desc, d.deal_id desc
     limit $5`,
    [agentId, status, after?.at ?? null, after?.dealId ?? null, limit],
  );
  return rows.map((row) => ({
    dealId: row.deal_id,
    workspaceId: row.workspace_id,
    path: row.path,
    status: row.status,
    createdAt: row.created_at,
    agreedVersion: row.agreed_version,
    title: row.title,
  }));
}
