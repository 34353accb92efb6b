import type { Queryable } from '../driver.ts';

/** What each party agreed to, version by version (deal_agreements, migrations/012_deals.sql). */

export interface AgreementRow {
  agreementId: string;
  dealId: string;
  agentId: string;
  version: number;
  sha256: string;
  parties: string[];
  agreedAt: Date;
  receipt: unknown;
}

export async function insertAgreement(tx: Queryable, row: AgreementRow): Promise<void> {
  await tx.query(
    `insert into deal_agreements (agreement_id, deal_id, agent_id, version, sha256, parties,
       agreed_at, receipt)
     values ($1, $2, $3, $4, $5, $6::uuid[], $7, $8::text::jsonb)`,
    [
      row.agreementId,
      row.dealId,
      row.agentId,
      row.version,
      row.sha256,
      row.parties,
      row.agreedAt,
      JSON.stringify(row.receipt),
    ],
  );
}

export async function findAgreement(
  db: Queryable,
  dealId: string,
  version: number,
  agentId: string,
): Promise<AgreementRow | null> {
  const rows = await listAgreements(db, dealId);
  return rows.find((r) => r.version === version && r.agentId === agentId) ?? null;
}

export async function listAgreements(db: Queryable, dealId: string): Promise<AgreementRow[]> {
  const rows = await db.query<{
    agreement_id: string;
    agent_id: string;
    version: number;
    sha256: string;
    parties: string[];
    agreed_at: Date;
    receipt: unknown;
  }>(
    `select agreement_id, agent_id, version, sha256, parties, agreed_at, receipt
     from deal_agreements where deal_id = $1 order by agreed_at, agreement_id`,
    [dealId],
  );
  return rows.map((r) => ({
    agreementId: r.agreement_id,
    dealId,
    agentId: r.agent_id,
    version: r.version,
    sha256: r.sha256,
    parties: r.parties,
    agreedAt: r.agreed_at,
    receipt: r.receipt,
  }));
}
