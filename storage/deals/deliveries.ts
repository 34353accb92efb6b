import type { Queryable } from '../driver.ts';

/** What a party delivered on a deal (deal_deliveries, migrations/012_deals.sql). */

export interface DeliveryRow {
  deliveryId: string;
  dealId: string;
  agentId: string;
  note: string | null;
  files: { path: string; version: number; size: number; sha256: string }[];
  deliveredAt: Date;
  receipt: unknown;
}

export async function insertDelivery(tx: Queryable, row: DeliveryRow): Promise<void> {
  await tx.query(
    `insert into deal_deliveries (delivery_id, deal_id, agent_id, note, files, delivered_at,
       receipt) values ($1, $2, $3, $4, $5::text::jsonb, $6, $7::text::jsonb)`,
    [
      row.deliveryId,
      row.dealId,
      row.agentId,
      row.note,
      JSON.stringify(row.files),
      row.deliveredAt,
      JSON.stringify(row.receipt),
    ],
  );
}

export async function listDeliveries(db: Queryable, dealId: string): Promise<DeliveryRow[]> {
  const rows = await db.query<{
    delivery_id: string;
    agent_id: string;
    note: string | null;
    files: DeliveryRow['files'];
    delivered_at: Date;
    receipt: unknown;
  }>(
    `select delivery_id, agent_id, note, files, delivered_at, receipt from deal_deliveries
     where deal_id = $1 order by delivered_at, delivery_id`,
    [dealId],
  );
  return rows.map((r) => ({
    deliveryId: r.delivery_id,
    dealId,
    agentId: r.agent_id,
    note: r.note,
    files: r.files,
    deliveredAt: r.delivered_at,
    receipt: r.receipt,
  }));
}
