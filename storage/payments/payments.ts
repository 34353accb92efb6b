import type { Queryable } from '../driver.ts';

/**
 * Payments (migrations/022_payments.sql): a payment's row, written when it is requested, locked
 * and moved from one status to the next, and the reads that follow the open ones (the watcher's,
 * the expiry job's, a new payout address's). Amounts are micro-USDC as bigint: they are written
 * as decimal text and read back `::text`, since the drivers hand int8 back as a JS number (exact
 * only below 2^53, and a payment may be up to 10^18 micro-USDC).
 */

export type PaymentStatus = 'requested' | 'seen' | 'confirmed' | 'final' | 'expired';

/** The statuses the watcher still follows. */
const OPEN_STATUSES = `('requested', 'seen', 'confirmed')`;

export interface PaymentRow {
  paymentId: string;
  dealId: string;
  workspaceId: string;
  payerAgentId: string;
  payeeAgentId: string;
  memo: string;
  /** micro-USDC. */
  amountUnits: bigint;
  payeeAddress: string;
  depositAddress: string | null;
  depositSalt: string | null;
  chainId: number;
  tokenAddress: string;
  status: PaymentStatus;
  machine: unknown;
  version: number;
  createdAt: Date;
  expiresAt: Date;
  /** The payer's last reported transaction, kept while its check is unknown. */
  reportedTxHash: string | null;
  /** When it turned final; null before. */
  finalAt: Date | null;
  /**
   * The chain's head when it was requested: only a transfer in a later block credits it
   * (actors/payments/chain/crediting-rules.ts); null: none is known, and no transfer credits it.
   */
  requestedAtBlock: number | null;
}

/**
 * What a new payment is made of: it starts `requested`, at version 1. Without
 * `requestedAtBlock` no transfer will ever credit it.
 */
export type NewPayment = Omit<
  PaymentRow,
  'status' | 'version' | 'reportedTxHash' | 'finalAt' | 'requestedAtBlock'
> & {
  status?: PaymentStatus;
  requestedAtBlock?: number | null;
};

type PaymentRecord = {
  payment_id: string;
  deal_id: string;
  workspace_id: string;
  payer_agent_id: string;
  payee_agent_id: string;
  memo: string;
  amount_units: string;
  payee_address: string;
  deposit_address: string | null;
  deposit_salt: string | null;
  chain_id: number;
  token_address: string;
  status: PaymentStatus;
  machine: unknown;
  version: number;
  created_at: Date;
  expires_at: Date;
  reported_tx_hash: string | null;
  final_at: Date | null;
  requested_at_block: string | null;
};

const PAYMENT_COLUMNS = `payment_id, deal_id, workspace_id, payer_agent_id, payee_agent_id, memo,
  amount_units::text as amount_units, payee_address, deposit_address, deposit_salt, chain_id,
  token_address, status, machine, version, created_at, expires_at, reported_tx_hash, final_at,
  requested_at_block::text as requested_at_block`;

const toPayment = (r: PaymentRecord): PaymentRow => ({
  paymentId: r.payment_id,
  dealId: r.deal_id,
  workspaceId: r.workspace_id,
  payerAgentId: r.payer_agent_id,
  payeeAgentId: r.payee_agent_id,
  memo: r.memo,
  amountUnits: BigInt(r.amount_units),
  payeeAddress: r.payee_address,
  depositAddress: r.deposit_address,
  depositSalt: r.deposit_salt,
  chainId: r.chain_id,
  tokenAddress: r.token_address,
  status: r.status,
  machine: r.machine,
  version: r.version,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  reportedTxHash: r.reported_tx_hash,
  finalAt: r.final_at,
  requestedAtBlock: r.requested_at_block === null ? null : Number(r.requested_at_block),
});

/**
 * Records a new payment; false (nothing written) when the deal already has a payment with that
 * memo, which the caller answers with `409 memo_not_unique`. Two requests with one memo at once
 * on PostgreSQL: the second waits for the first and gets false.
 */
export async function insertPayment(tx: Queryable, row: NewPayment): Promise<boolean> {
  const inserted = await tx.query(
    `insert into payments (payment_id, deal_id, workspace_id, payer_agent_id, payee_agent_id,
       memo, amount_units, payee_address, deposit_address, deposit_salt, chain_id, token_address,
       status, machine, created_at, expires_at, requested_at_block)
     values ($1, $2, $3, $4, $5, $6, $7::text::bigint, $8, $9, $10, $11, $12, $13,
       $14::text::jsonb, $15, $16, $17::text::bigint)
     on conflict (deal_id, memo) do nothing
     returning payment_id`,
    [
      row.paymentId,
      row.dealId,
      row.workspaceId,
      row.payerAgentId,
      row.payeeAgentId,
      row.memo,
      row.amountUnits.toString(),
      row.payeeAddress,
      row.depositAddress,
      row.depositSalt,
      row.chainId,
      row.tokenAddress,
      row.status ?? 'requested',
      JSON.stringify(row.machine),
      row.createdAt,
      row.expiresAt,
      row.requestedAtBlock?.toString() ?? null,
    ],
  );
  return inserted.length === 1;
}

export async function findPayment(db: Queryable, paymentId: string): Promise<PaymentRow | null> {
  const [row] = await db.query<PaymentRecord>(
    `select ${PAYMENT_COLUMNS} from payments where payment_id = $1`,
    [paymentId],
  );
  return row ? toPayment(row) : null;
}

/** The deal's payments, oldest first (a deal holds few: one per memo). */
export async function paymentsOfDeal(db: Queryable, dealId: string): Promise<PaymentRow[]> {
  const rows = await db.query<PaymentRecord>(
    `select ${PAYMENT_COLUMNS} from payments where deal_id = $1
     order by created_at, payment_id`,
    [dealId],
  );
  return rows.map(toPayment);
}

/** Holds the payment's row until the transaction ends; its version, or null when there is none. */
export async function lockPayment(tx: Queryable, paymentId: string): Promise<number | null> {
  const [row] = await tx.query<{ version: number }>(
    'select version from payments where payment_id = $1 for update',
    [paymentId],
  );
  return row?.version ?? null;
}

/** A move of a payment: its new status and machine snapshot, at `at`. */
export interface PaymentChange {
  status: PaymentStatus;
  machine: unknown;
  /** When the move happened: a move to `final` keeps it as `final_at`. */
  at: Date;
  /** Set to keep the payer's newly reported transaction; left out, the kept one stays. */
  reportedTxHash?: string | null;
}

/**
 * Writes a move of the payment made from `expectedVersion`; the new version, or null (nothing
 * written) when the payment has moved since (or is not there): the caller reloads and decides
 * again.
 */
export async function updatePayment(
  tx: Queryable,
  paymentId: string,
  expectedVersion: number,
  change: PaymentChange,
): Promise<number | null> {
  const keepReported = change.reportedTxHash === undefined;
  const [row] = await tx.query<{ version: number }>(
    `update payments set status = $3, machine = $4::text::jsonb, version = version + 1,
       final_at = case when $3 = 'final' then coalesce(final_at, $5) end,
       reported_tx_hash = case when $6 then reported_tx_hash else $7 end
     where payment_id = $1 and version = $2 returning version`,
    [
      paymentId,
      expectedVersion,
      change.status,
      JSON.stringify(change.machine),
      change.at,
      keepReported,
      change.reportedTxHash ?? null,
    ],
  );
  return row?.version ?? null;
}

/** Where a page of the watcher's reads starts: after this payment id (they go by id). */
export type PaymentPageAfter = string | null;

/**
 * The open payments (requested, seen, confirmed) whose deposit address or payee address is one
 * of `addresses` (any case), by payment id after `after`, at most `limit`: the watcher matches a
 * block's transfers with them. It pages through a long answer; the caller bounds `addresses`.
 */
export async function openPaymentsByAddress(
  db: Queryable,
  addresses: readonly string[],
  after: PaymentPageAfter,
  limit: number,
): Promise<PaymentRow[]> {
  if (addresses.length === 0) return [];
  const lowered = [...new Set(addresses.map((address) => address.toLowerCase()))];
  const rows = await db.query<PaymentRecord>(
    `select ${PAYMENT_COLUMNS} from payments
     where payment_id in (
         select payment_id from payments
         where lower(deposit_address) = any($1::text[]) and deposit_address is not null
           and status in ${OPEN_STATUSES}
         union
         select payment_id from payments
         where lower(payee_address) = any($1::text[]) and status in ${OPEN_STATUSES})
       and ($2::uuid is null or payment_id > $2::uuid)
     order by payment_id limit $3`,
    [lowered, after, limit],
  );
  return rows.map(toPayment);
}

/**
 * The addresses the watcher reads transfers to on `chainId`, lower-case, distinct, in order,
 * after `after` (null: from the start), `limit` at most: the deposit address of each requested
 * payment, and the payee address of each requested payment whose payer has a payout address (a
 * transfer to a payee address counts only from there, so without one there is nothing to find).
 */
export async function openPaymentAddresses(
  db: Queryable,
  chainId: number,
  after: string | null,
  limit: number,
): Promise<string[]> {
  const rows = await db.query<{ address: string }>(
    `select address from (
         select lower(deposit_address) as address from payments
         where status = 'requested' and deposit_address is not null and chain_id = $1
         union
         select lower(p.payee_address) from payments p
         join payout_addresses o on o.agent_id = p.payer_agent_id
         where p.status = 'requested' and p.chain_id = $1) watched
     where $2::text is null or address > $2::text
     order by address limit $3`,
    [chainId, after, limit],
  );
  return rows.map((row) => row.address);
}

/**
 * The payments credited and not yet final (seen, confirmed), by payment id after `after`, at
 * most `limit`: the watcher counts their confirmations and looks for reorgs.
 */
export async function paymentsInFlight(
  db: Queryable,
  after: PaymentPageAfter,
  limit: number,
): Promise<PaymentRow[]> {
  const rows = await db.query<PaymentRecord>(
    `select ${PAYMENT_COLUMNS} from payments
     where status in ('seen', 'confirmed') and ($1::uuid is null or payment_id > $1::uuid)
     order by payment_id limit $2`,
    [after, limit],
  );
  return rows.map(toPayment);
}

/** Requested payments whose time is up at `now`, the longest overdue first, at most `limit`. */
export async function paymentsDueToExpire(
  db: Queryable,
  now: Date,
  limit: number,
): Promise<PaymentRow[]> {
  const rows = await db.query<PaymentRecord>(
    `select ${PAYMENT_COLUMNS} from payments
     where status = 'requested' and expires_at <= $1
     order by expires_at, payment_id limit $2`,
    [now, limit],
  );
  return rows.map(toPayment);
}

/** An open payment (not final, not expired) where the agent is the payee: what a new payout address touches. */
export interface OpenPaymentOfPayee {
  paymentId: string;
  dealId: string;
  workspaceId: string;
  payerAgentId: string;
  payeeAddress: string;
}

/** The payee's open payments (requested, seen, confirmed), oldest first, at most `limit`. */
export async function openPaymentsOfPayee(
  db: Queryable,
  payeeAgentId: string,
  limit: number,
): Promise<OpenPaymentOfPayee[]> {
  const rows = await db.query<{
    payment_id: string;
    deal_id: string;
    workspace_id: string;
    payer_agent_id: string;
    payee_address: string;
  }>(
    `select payment_id, deal_id, workspace_id, payer_agent_id, payee_address from payments
     where payee_agent_id = $1 and status in ('requested', 'seen', 'confirmed')
     order by created_at, payment_id limit $2`,
    [payeeAgentId, limit],
  );
  return rows.map((row) => ({
    paymentId: row.payment_id,
    dealId: row.deal_id,
    workspaceId: row.workspace_id,
    payerAgentId: row.payer_agent_id,
    payeeAddress: row.payee_address,
  }));
}
