import type { Queryable } from '../driver.ts';

/**
 * Payments (migrations/022_payments.sql): payout addresses, payments and the transfers that
 * credited them, the watcher's place on each chain, each workspace's log, off-chain payments,
 * and the reputation's reads of them. Amounts are micro-USDC as bigint: they are written as
 * decimal text and read back `::text`, since the drivers hand int8 back as a JS number (exact
 * only below 2^53, and a payment may be up to 10^18 micro-USDC).
 */

export type PaymentStatus = 'requested' | 'seen' | 'confirmed' | 'final' | 'expired';

/** The statuses the watcher still follows. */
const OPEN_STATUSES = `('requested', 'seen', 'confirmed')`;

// ---------------------------------------------------------------------------------------------
// Payout addresses

export interface PayoutAddressRow {
  agentId: string;
  /** EIP-55, as proved. */
  address: string;
  signature: string;
  verifiedAt: Date;
}

/** Sets the agent's payout address (a new proof replaces the old one). */
export async function upsertPayoutAddress(tx: Queryable, row: PayoutAddressRow): Promise<void> {
  await tx.query(
    `insert into payout_addresses (agent_id, address, signature, verified_at)
     values ($1, $2, $3, $4)
     on conflict (agent_id) do update set address = excluded.address,
       signature = excluded.signature, verified_at = excluded.verified_at`,
    [row.agentId, row.address, row.signature, row.verifiedAt],
  );
}

export async function findPayoutAddress(
  db: Queryable,
  agentId: string,
): Promise<PayoutAddressRow | null> {
  const [row] = await db.query<{
    agent_id: string;
    address: string;
    signature: string;
    verified_at: Date;
  }>('select agent_id, address, signature, verified_at from payout_addresses where agent_id = $1', [
    agentId,
  ]);
  return row
    ? {
        agentId: row.agent_id,
        address: row.address,
        signature: row.signature,
        verifiedAt: row.verified_at,
      }
    : null;
}

// ---------------------------------------------------------------------------------------------
// Payments

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

// ---------------------------------------------------------------------------------------------
// Credits: which transfer paid which payment

/** A transfer: one `Transfer` log of one transaction on one chain. */
export interface TransferKey {
  chainId: number;
  /** 0x and 64 hex digits, any case (kept lower-case). */
  txHash: string;
  logIndex: number;
}

/**
 * Credits the transfer to the payment. The unique constraints decide, so two transactions at
 * once get exactly one 'credited': 'already_credited' when the transfer has credited a payment
 * already (this one or another; see findCredit) or the payment has a credit already.
 */
export async function creditTransfer(
  tx: Queryable,
  credit: TransferKey & { paymentId: string },
): Promise<'credited' | 'already_credited'> {
  const inserted = await tx.query(
    `insert into payment_credits (chain_id, tx_hash, log_index, payment_id)
     values ($1, $2, $3, $4)
     on conflict do nothing
     returning payment_id`,
    [credit.chainId, credit.txHash.toLowerCase(), credit.logIndex, credit.paymentId],
  );
  return inserted.length === 1 ? 'credited' : 'already_credited';
}

/** The payment the transfer credited, or null. */
export async function findCredit(db: Queryable, transfer: TransferKey): Promise<string | null> {
  const [row] = await db.query<{ payment_id: string }>(
    `select payment_id from payment_credits
     where chain_id = $1 and tx_hash = $2 and log_index = $3`,
    [transfer.chainId, transfer.txHash.toLowerCase(), transfer.logIndex],
  );
  return row?.payment_id ?? null;
}

/** The transfer that credited the payment, or null. */
export async function creditOfPayment(
  db: Queryable,
  paymentId: string,
): Promise<TransferKey | null> {
  const [row] = await db.query<{ chain_id: number; tx_hash: string; log_index: number }>(
    'select chain_id, tx_hash, log_index from payment_credits where payment_id = $1',
    [paymentId],
  );
  return row ? { chainId: row.chain_id, txHash: row.tx_hash, logIndex: row.log_index } : null;
}

/**
 * A reorg dropped the crediting transfer and the payment goes back to requested: its credit is
 * deleted, so the transfer may credit again if it reappears. False when it had none.
 */
export async function releaseCredit(tx: Queryable, paymentId: string): Promise<boolean> {
  const deleted = await tx.query('delete from payment_credits where payment_id = $1 returning 1', [
    paymentId,
  ]);
  return deleted.length > 0;
}

// ---------------------------------------------------------------------------------------------
// The watcher's place

/** The last block the watcher checked on the chain, or null before its first. */
export async function readChainCursor(db: Queryable, chainId: number): Promise<number | null> {
  const [row] = await db.query<{ last_block: number }>(
    'select last_block from chain_cursor where chain_id = $1',
    [chainId],
  );
  return row?.last_block ?? null;
}

/** Sets it (also back, when a reorg makes the watcher read blocks again). */
export async function writeChainCursor(
  tx: Queryable,
  chainId: number,
  lastBlock: number,
): Promise<void> {
  await tx.query(
    `insert into chain_cursor (chain_id, last_block) values ($1, $2)
     on conflict (chain_id) do update set last_block = excluded.last_block`,
    [chainId, lastBlock],
  );
}

// ---------------------------------------------------------------------------------------------
// The workspace's log

export interface WorkspaceLogRow {
  /** Its place in the log: larger is newer (numbered across workspaces, so with gaps). */
  seq: number;
  workspaceId: string;
  at: Date;
  /** e.g. `payment.requested`, `payment.seen`, `offchain_payment.recorded`. */
  kind: string;
  /** The payment (on-chain or off-chain, as `kind` says) the line is about. */
  paymentId: string | null;
  data: unknown;
}

/** Adds a line to the workspace's log; its seq. */
export async function appendWorkspaceLog(
  tx: Queryable,
  line: Omit<WorkspaceLogRow, 'seq'>,
): Promise<number> {
  const [row] = await tx.query<{ seq: number }>(
    `insert into workspace_log (workspace_id, at, kind, payment_id, data)
     values ($1, $2, $3, $4, $5::text::jsonb) returning seq`,
    [line.workspaceId, line.at, line.kind, line.paymentId, JSON.stringify(line.data)],
  );
  if (!row) throw new Error('the log line was not kept');
  return row.seq;
}

/**
 * The workspace's log, newest first, from before `beforeSeq` (null: from the newest), at most
 * `limit` lines. A cursor page keys on the last line's seq: `{ kind: 'l', shape: ['int'] }`.
 */
export async function readWorkspaceLog(
  db: Queryable,
  workspaceId: string,
  beforeSeq: number | null,
  limit: number,
): Promise<WorkspaceLogRow[]> {
  const rows = await db.query<{
    seq: number;
    at: Date;
    kind: string;
    payment_id: string | null;
    data: unknown;
  }>(
    `select seq, at, kind, payment_id, data from workspace_log
     where workspace_id = $1 and ($2::bigint is null or seq < $2::bigint)
     order by seq desc limit $3`,
    [workspaceId, beforeSeq, limit],
  );
  return rows.map((r) => ({
    seq: r.seq,
    workspaceId,
    at: r.at,
    kind: r.kind,
    paymentId: r.payment_id,
    data: r.data,
  }));
}

// ---------------------------------------------------------------------------------------------
// Off-chain payments

export interface OffchainPaymentRow {
  offchainPaymentId: string;
  dealId: string;
  workspaceId: string;
  payerAgentId: string;
  payeeAgentId: string;
  recordedBy: string;
  amount: string;
  currency: string;
  means: string;
  note: string | null;
  status: 'recorded' | 'confirmed';
  recordedAt: Date;
  confirmedAt: Date | null;
  confirmedBy: string | null;
}

/** Records an off-chain payment, `recorded`, as told by `recordedBy` (one of its parties). */
export async function insertOffchainPayment(
  tx: Queryable,
  row: Omit<OffchainPaymentRow, 'status' | 'confirmedAt' | 'confirmedBy'>,
): Promise<void> {
  await tx.query(
    `insert into offchain_payments (offchain_payment_id, deal_id, workspace_id, payer_agent_id,
       payee_agent_id, recorded_by, amount, currency, means, note, status, recorded_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'recorded', $11)`,
    [
      row.offchainPaymentId,
      row.dealId,
      row.workspaceId,
      row.payerAgentId,
      row.payeeAgentId,
      row.recordedBy,
      row.amount,
      row.currency,
      row.means,
      row.note,
      row.recordedAt,
    ],
  );
}

/** An off-chain payment row as the database gives it. */
interface OffchainPaymentRaw extends Record<string, unknown> {
  offchain_payment_id: string;
  deal_id: string;
  workspace_id: string;
  payer_agent_id: string;
  payee_agent_id: string;
  recorded_by: string;
  amount: string;
  currency: string;
  means: string;
  note: string | null;
  status: OffchainPaymentRow['status'];
  recorded_at: Date;
  confirmed_at: Date | null;
  confirmed_by: string | null;
}

const OFFCHAIN_COLUMNS = `offchain_payment_id, deal_id, workspace_id, payer_agent_id, payee_agent_id,
       recorded_by, amount, currency, means, note, status, recorded_at, confirmed_at, confirmed_by`;

function offchainRow(r: OffchainPaymentRaw): OffchainPaymentRow {
  return {
    offchainPaymentId: r.offchain_payment_id,
    dealId: r.deal_id,
    workspaceId: r.workspace_id,
    payerAgentId: r.payer_agent_id,
    payeeAgentId: r.payee_agent_id,
    recordedBy: r.recorded_by,
    amount: r.amount,
    currency: r.currency,
    means: r.means,
    note: r.note,
    status: r.status,
    recordedAt: r.recorded_at,
    confirmedAt: r.confirmed_at,
    confirmedBy: r.confirmed_by,
  };
}

export async function findOffchainPayment(
  db: Queryable,
  offchainPaymentId: string,
): Promise<OffchainPaymentRow | null> {
  const [r] = await db.query<OffchainPaymentRaw>(
    `select ${OFFCHAIN_COLUMNS} from offchain_payments where offchain_payment_id = $1`,
    [offchainPaymentId],
  );
  return r ? offchainRow(r) : null;
}

/** A deal's off-chain payments, oldest first, as get_deal lists them beside its USDC payments. */
export async function offchainPaymentsOfDeal(
  db: Queryable,
  dealId: string,
): Promise<OffchainPaymentRow[]> {
  const rows = await db.query<OffchainPaymentRaw>(
    `select ${OFFCHAIN_COLUMNS} from offchain_payments where deal_id = $1
     order by recorded_at, offchain_payment_id`,
    [dealId],
  );
  return rows.map(offchainRow);
}

/**
 * The other party confirms a recorded off-chain payment. False (nothing written) unless it is
 * still `recorded` and `by` is its party that did not record it.
 */
export async function confirmOffchainPayment(
  tx: Queryable,
  offchainPaymentId: string,
  by: string,
  at: Date,
): Promise<boolean> {
  const updated = await tx.query(
    `update offchain_payments set status = 'confirmed', confirmed_at = $3, confirmed_by = $2
     where offchain_payment_id = $1 and status = 'recorded'
       and $2::uuid in (payer_agent_id, payee_agent_id) and $2::uuid <> recorded_by
     returning 1`,
    [offchainPaymentId, by, at],
  );
  return updated.length === 1;
}

// ---------------------------------------------------------------------------------------------
// Reputation

export interface PaymentCounts {
  /** Final on-chain payments the agent paid. */
  payments_made: number;
  /** Final on-chain payments the agent was paid. */
  payments_received: number;
  /** Off-chain payments of the agent's (either side) confirmed by the other party. */
  offchain_payments_confirmed: number;
}

/** What an agent's record counts: only final on-chain payments, and confirmed off-chain ones apart. */
export async function paymentCounts(db: Queryable, agentId: string): Promise<PaymentCounts> {
  const counts = await paymentCountsOf(db, [agentId]);
  return (
    counts.get(agentId) ?? {
      payments_made: 0,
      payments_received: 0,
      offchain_payments_confirmed: 0,
    }
  );
}

/**
 * paymentCounts for every agent of `agentIds` in one statement (a store page names many), read
 * from the counters the moves keep (countFinalPayment, countConfirmedOffchain): no recount.
 */
export async function paymentCountsOf(
  db: Queryable,
  agentIds: readonly string[],
): Promise<Map<string, PaymentCounts>> {
  if (agentIds.length === 0) return new Map();
  const rows = await db.query<{
    agent_id: string;
    payments_made: number;
    payments_received: number;
    offchain_payments_confirmed: number;
  }>(
    `select agent_id, payments_made, payments_received, offchain_payments_confirmed
     from agent_payment_counts where agent_id = any($1::uuid[])`,
    [[...new Set(agentIds)]],
  );
  const counts = new Map(
    agentIds.map((agentId): [string, PaymentCounts] => [
      agentId,
      { payments_made: 0, payments_received: 0, offchain_payments_confirmed: 0 },
    ]),
  );
  for (const row of rows) {
    counts.set(row.agent_id, {
      payments_made: row.payments_made,
      payments_received: row.payments_received,
      offchain_payments_confirmed: row.offchain_payments_confirmed,
    });
  }
  return counts;
}

/**
 * Counts a payment that turned final for both its parties, in the transaction of that move
 * (actors/payments/moves.ts), so the counts never disagree with the payments.
 */
export async function countFinalPayment(
  tx: Queryable,
  payerAgentId: string,
  payeeAgentId: string,
): Promise<void> {
  await tx.query(
    `insert into agent_payment_counts (agent_id, payments_made, payments_received)
     values ($1, 1, 0), ($2, 0, 1)
     on conflict (agent_id) do update set
       payments_made = agent_payment_counts.payments_made + excluded.payments_made,
       payments_received = agent_payment_counts.payments_received + excluded.payments_received`,
    [payerAgentId, payeeAgentId],
  );
}

/** Counts an off-chain payment confirmed, for both its parties, in the confirming transaction. */
export async function countConfirmedOffchain(
  tx: Queryable,
  payerAgentId: string,
  payeeAgentId: string,
): Promise<void> {
  await tx.query(
    `insert into agent_payment_counts (agent_id, offchain_payments_confirmed)
     values ($1, 1), ($2, 1)
     on conflict (agent_id) do update set
       offchain_payments_confirmed = agent_payment_counts.offchain_payments_confirmed + 1`,
    [payerAgentId, payeeAgentId],
  );
}

/** One final payment on an agent's public record: anyone can check it on a block explorer. */
export interface AgentPaymentRecord {
  payment_id: string;
  deal_id: string;
  /** Whether the agent paid it (`made`) or was paid (`received`). */
  direction: 'made' | 'received';
  counterparty_agent_id: string;
  /** micro-USDC. */
  amount_units: bigint;
  chain_id: number;
  /** The crediting transaction and its log (null only if its credit were missing). */
  tx_hash: string | null;
  log_index: number | null;
  status: 'final';
  /** When it turned final. */
  at: Date;
}

/** The agent's final on-chain payments, made and received, newest first, at most `limit`. */
export async function paymentsOfAgent(
  db: Queryable,
  agentId: string,
  limit: number,
): Promise<AgentPaymentRecord[]> {
  const rows = await db.query<{
    payment_id: string;
    deal_id: string;
    direction: 'made' | 'received';
    counterparty_agent_id: string;
    amount_units: string;
    chain_id: number;
    tx_hash: string | null;
    log_index: number | null;
    at: Date;
  }>(
    `select p.payment_id, p.deal_id, p.direction, p.counterparty_agent_id,
       p.amount_units::text as amount_units, p.chain_id, c.tx_hash, c.log_index, p.final_at as at
     from (
       (select payment_id, deal_id, 'made' as direction, payee_agent_id as counterparty_agent_id,
          amount_units, chain_id, final_at from payments
        where payer_agent_id = $1 and status = 'final' order by final_at desc limit $2)
       union all
       (select payment_id, deal_id, 'received', payer_agent_id, amount_units, chain_id, final_at
        from payments
        where payee_agent_id = $1 and status = 'final' order by final_at desc limit $2)
     ) p
     left join payment_credits c on c.payment_id = p.payment_id
     order by p.final_at desc, p.payment_id desc limit $2`,
    [agentId, limit],
  );
  return rows.map((r) => ({
    payment_id: r.payment_id,
    deal_id: r.deal_id,
    direction: r.direction,
    counterparty_agent_id: r.counterparty_agent_id,
    amount_units: BigInt(r.amount_units),
    chain_id: r.chain_id,
    tx_hash: r.tx_hash,
    log_index: r.log_index,
    status: 'final',
    at: r.at,
  }));
}

/** Which of `dealIds` have a final on-chain payment: their ratings are payment-backed. */
export async function dealsWithFinalPayment(
  db: Queryable,
  dealIds: readonly string[],
): Promise<Set<string>> {
  if (dealIds.length === 0) return new Set();
  const rows = await db.query<{ deal_id: string }>(
    `select distinct deal_id from payments
     where deal_id = any($1::uuid[]) and status = 'final'`,
    [[...new Set(dealIds)]],
  );
  return new Set(rows.map((row) => row.deal_id));
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
