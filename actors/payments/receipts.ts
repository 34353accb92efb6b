import { randomUUID } from 'node:crypto';
import type { PaymentEvidence } from '../../machines/payment.ts';
import { formatUsdc } from '../../protocol/payments/money.ts';
import type { Transaction } from '../../storage/driver.ts';
import type { OffchainPaymentRow } from '../../storage/payments/offchain-payments.ts';
import {
  insertPaymentReceipt,
  type PaymentReceiptAction,
} from '../../storage/payments/payment-receipts.ts';
import type { Services } from '../kernel/services.ts';
import { appendReceipt } from '../receipts/chain.ts';
import type { SignedReceipt } from '../receipts/receipts.ts';
import type { PaymentRecord } from './actor.ts';

/**
 * The signed receipts of payments, chained in the workspace of the payment's deal after its
 * newest receipt (actors/receipts/chain.ts), in the transaction of the move they record:
 *
 * - `payment_requested`: what was asked (who pays whom, how much, the memo, where to pay);
 * - `payment_final`: the transfer that paid it (transaction, log index, block and its hash);
 * - `offchain_payment_confirmed`: what one party recorded and the other confirmed.
 *
 * Seen, confirmed, reorged and expired get none: they are steps on the way, each a line of the
 * workspace log; a payment's proof is the request and the final transfer (which anyone can
 * check on the chain), and a receipt of a step a reorg may undo would prove nothing.
 */

async function issue(
  tx: Transaction,
  services: Services,
  at: Date,
  keys: { workspaceId: string; dealId: string; paymentId: string; action: PaymentReceiptAction },
  content: Record<string, unknown>,
): Promise<SignedReceipt> {
  const receiptId = randomUUID();
  const receipt = await appendReceipt(tx, services.files.signingKeys, keys.workspaceId, {
    receipt_id: receiptId,
    action: keys.action,
    workspace_id: keys.workspaceId,
    deal_id: keys.dealId,
    ...content,
    at: at.toISOString(),
  });
  await insertPaymentReceipt(tx, { ...keys, receiptId, issuedAt: at, receipt });
  return receipt;
}

/** The receipt of a USDC payment requested: `memo` is the payee's text, as asked. */
export function issueRequestedReceipt(
  tx: Transaction,
  services: Services,
  record: PaymentRecord,
  payTo: string,
): Promise<SignedReceipt> {
  return issue(
    tx,
    services,
    record.createdAt,
    { ...keysOf(record), action: 'payment_requested' },
    {
      payment_id: record.paymentId,
      payer_agent_id: record.payerAgentId,
      payee_agent_id: record.payeeAgentId,
      amount_usdc: formatUsdc(record.amountUnits),
      memo: record.memo,
      chain_id: record.chainId,
      token_address: record.tokenAddress,
      payee_address: record.payeeAddress,
      deposit_address: record.depositAddress,
      pay_to: payTo,
      expires_at: record.expiresAt.toISOString(),
    },
  );
}

/** The receipt of a USDC payment final: the transfer that paid it, as the chain told it. */
export function issueFinalReceipt(
  tx: Transaction,
  services: Services,
  record: PaymentRecord,
  evidence: PaymentEvidence,
  at: Date,
): Promise<SignedReceipt> {
  return issue(
    tx,
    services,
    at,
    { ...keysOf(record), action: 'payment_final' },
    {
      payment_id: record.paymentId,
      payer_agent_id: record.payerAgentId,
      payee_agent_id: record.payeeAgentId,
      amount_usdc: formatUsdc(record.amountUnits),
      chain_id: record.chainId,
      token_address: record.tokenAddress,
      tx_hash: evidence.tx_hash,
      log_index: evidence.log_index,
      block_number: evidence.block_number,
      block_hash: evidence.block_hash,
      from: evidence.from,
      to: evidence.to,
      transferred_usdc: formatUsdc(BigInt(evidence.amount_units)),
    },
  );
}

/** The receipt of an off-chain payment confirmed by the party that did not record it. */
export function issueOffchainConfirmedReceipt(
  tx: Transaction,
  services: Services,
  row: OffchainPaymentRow,
): Promise<SignedReceipt> {
  return issue(
    tx,
    services,
    row.confirmedAt ?? row.recordedAt,
    {
      workspaceId: row.workspaceId,
      dealId: row.dealId,
      paymentId: row.offchainPaymentId,
      action: 'offchain_payment_confirmed',
    },
    {
      offchain_payment_id: row.offchainPaymentId,
      payer_agent_id: row.payerAgentId,
      payee_agent_id: row.payeeAgentId,
      recorded_by: row.recordedBy,
      confirmed_by: row.confirmedBy,
      amount: row.amount,
      currency: row.currency,
      means: row.means,
      note: row.note,
      recorded_at: row.recordedAt.toISOString(),
    },
  );
}

const keysOf = (record: PaymentRecord) => ({
  workspaceId: record.workspaceId,
  dealId: record.dealId,
  paymentId: record.paymentId,
});
