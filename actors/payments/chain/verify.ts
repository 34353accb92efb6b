/**
 * Whether a transaction pays a payment, as every configured RPC tells it, judged by the
 * crediting rules (./crediting-rules.ts: chain, after the request, token, recipient, sender,
 * amount; the last, "once", is the database's at the credit). Doubt is never a failure: an RPC
 * that errs, times out, answers nonsense or disagrees with another makes the answer "unknown",
 * a transaction no RPC knows yet is "pending", and only a transaction every RPC shows is judged.
 */
import {
  decodeEventLog,
  erc20Abi,
  getAddress,
  type Hex,
  type Log,
  type PublicClient,
  type TransactionReceipt,
} from 'viem';
import type { PaymentEvidence } from '../../../machines/payment.ts';
import type { PaymentRow } from '../../../storage/payments/payments.ts';
import { agreedHead, rpcName, shortReason, type AgreedHead, type ChainAccess } from './clients.ts';
import {
  brokenByTransaction,
  brokenByTransfer,
  CREDITING_RULES,
  type Breach,
  type CreditingRule,
  type CreditTerms,
  type TransactionFacts,
} from './crediting-rules.ts';

/** Why a transaction every RPC showed does not pay the payment. */
export type NoMatchReason =
  Exclude<Breach, 'wrong_chain' | 'already_credited'> | 'not_a_transfer' | 'reverted';

export type Verification =
  | { kind: 'match'; evidence: PaymentEvidence; logIndex: number }
  | { kind: 'no_match'; reason: Exclude<NoMatchReason, 'before_request'> }
  /** `blockNumber`: the transaction's block, at or before the payment's `requestedAtBlock`. */
  | { kind: 'no_match'; reason: 'before_request'; blockNumber: number }
  | { kind: 'pending' }
  | { kind: 'unknown'; reason: string };

export interface VerifyOptions {
  /** The payer's registered payout address; null: a transfer to the payee address never counts. */
  payerAddress: string | null;
  /** Who reported the hash: the rules are the same, it names the report in reasons. */
  reporter: 'payer' | 'public' | 'watcher';
  /** When the check is made (ms since the epoch): the evidence's `checked_at`. */
  at: number;
  /**
   * The agreed head, when the caller read it already (the watcher, once per pass, for every
   * log it checks); unset: read here. An older head only counts fewer confirmations.
   */
  head?: AgreedHead;
}

const TX_HASH = /^0x[0-9a-f]{64}$/;

/** What every RPC must agree on about a receipt: where it is and what it logged. */
function fingerprint(receipt: TransactionReceipt): string {
  return JSON.stringify({
    block: receipt.blockNumber.toString(),
    hash: receipt.blockHash.toLowerCase(),
    status: receipt.status,
    logs: receipt.logs.map((log) => [
      log.address.toLowerCase(),
      log.logIndex,
      log.topics.map((topic) => topic.toLowerCase()),
      log.data.toLowerCase(),
    ]),
  });
}

/** A receipt a sane RPC could send for `txHash`, or why not. */
function nonsense(receipt: TransactionReceipt, txHash: string): string | null {
  if (
    typeof receipt.transactionHash !== 'string' ||
    receipt.transactionHash.toLowerCase() !== txHash
  )
    return 'answered the receipt of another transaction';
  if (typeof receipt.blockHash !== 'string' || !TX_HASH.test(receipt.blockHash.toLowerCase()))
    return 'answered a receipt without a block hash';
  if (typeof receipt.blockNumber !== 'bigint' || receipt.blockNumber < 0n)
    return 'answered a receipt without a block number';
  if (receipt.status !== 'success' && receipt.status !== 'reverted')
    return 'answered a receipt without a status';
  if (!Array.isArray(receipt.logs)) return 'answered a receipt without logs';
  return null;
}

/** The receipt as every RPC has it, none anywhere yet, or why that cannot be told. */
async function agreedReceipt(
  clients: readonly PublicClient[],
  txHash: Hex,
): Promise<
  | { receipt: TransactionReceipt; answers: PaymentEvidence['rpc_answers'] }
  | { pending: true }
  | { unknown: string }
> {
  const settled = await Promise.allSettled(
    clients.map((client) => client.getTransactionReceipt({ hash: txHash })),
  );
  const receipts: TransactionReceipt[] = [];
  let missing = 0;
  for (const [index, outcome] of settled.entries()) {
    const rpc = rpcName(clients[index] as PublicClient, index);
    if (outcome.status === 'rejected') {
      if ((outcome.reason as { name?: string }).name === 'TransactionReceiptNotFoundError') {
        missing += 1;
        continue;
      }
      return { unknown: `${rpc}: ${shortReason(outcome.reason)}` };
    }
    let wrong: string | null;
    try {
      wrong = nonsense(outcome.value, txHash);
    } catch {
      wrong = 'answered something that is not a receipt';
    }
    if (wrong !== null) return { unknown: `${rpc}: ${wrong}` };
    receipts.push(outcome.value);
  }
  if (missing === clients.length) return { pending: true };
  if (missing > 0) return { unknown: 'some RPCs know the transaction and others do not yet' };
  const [first] = receipts;
  if (!first || receipts.some((receipt) => fingerprint(receipt) !== fingerprint(first))) {
    return { unknown: 'the RPCs do not agree on the transaction' };
  }
  return {
    receipt: first,
    answers: receipts.map((receipt, index) => ({
      rpc: rpcName(clients[index] as PublicClient, index),
      block_hash: receipt.blockHash.toLowerCase(),
    })),
  };
}

/** The chain id every RPC says it serves, or why that cannot be told. */
async function agreedChainId(
  clients: readonly PublicClient[],
): Promise<{ chainId: number } | { unknown: string }> {
  const settled = await Promise.allSettled(clients.map((client) => client.getChainId()));
  let agreed: number | null = null;
  for (const [index, outcome] of settled.entries()) {
    const rpc = rpcName(clients[index] as PublicClient, index);
    if (outcome.status === 'rejected') return { unknown: `${rpc}: ${shortReason(outcome.reason)}` };
    if (!Number.isSafeInteger(outcome.value) || outcome.value <= 0) {
      return { unknown: `${rpc}: answered no chain id` };
    }
    if (agreed !== null && agreed !== outcome.value) {
      return { unknown: 'the RPCs do not serve one chain' };
    }
    agreed = outcome.value;
  }
  return agreed === null ? { unknown: 'no RPC' } : { chainId: agreed };
}

/** What a broken rule answers: a refusal, or the service's own doubt. */
function judged(rule: CreditingRule, tx: TransactionFacts, terms: CreditTerms): Verification {
  if (rule.outcome === 'undecided') {
    return {
      kind: 'unknown',
      reason:
        rule.breach === 'wrong_chain'
          ? `the RPCs serve chain ${tx.chainId}, and the payment was requested on chain ${terms.chainId}`
          : `${rule.breach}: ${rule.says}`,
    };
  }
  if (rule.breach === 'before_request') {
    return { kind: 'no_match', reason: 'before_request', blockNumber: Number(tx.blockNumber) };
  }
  return {
    kind: 'no_match',
    reason: rule.breach as Exclude<NoMatchReason, 'before_request'>,
  };
}

/** The payment's terms, as the crediting rules read them. */
function termsOf(payment: PaymentRow, payerAddress: string | null): CreditTerms {
  return {
    chainId: payment.chainId,
    tokenAddress: payment.tokenAddress,
    depositAddress: payment.depositAddress,
    payeeAddress: payment.payeeAddress,
    amountUnits: payment.amountUnits,
    requestedAtBlock: payment.requestedAtBlock,
    payerAddress,
  };
}

/** A Transfer log decoded, or null when the log is no ERC-20 Transfer. */
function transferOf(log: Log): { from: string; to: string; value: bigint } | null {
  try {
    const decoded = decodeEventLog({ abi: erc20Abi, data: log.data, topics: log.topics });
    if (decoded.eventName !== 'Transfer') return null;
    return { from: decoded.args.from, to: decoded.args.to, value: decoded.args.value };
  } catch {
    return null;
  }
}

/** Whether `txHash` pays `payment`, judged from what every RPC of `access` answers. */
export async function verifyTransfer(
  access: ChainAccess,
  payment: PaymentRow,
  txHash: string,
  opts: VerifyOptions,
): Promise<Verification> {
  const hash = txHash.toLowerCase();
  if (!TX_HASH.test(hash)) return { kind: 'no_match', reason: 'not_a_transfer' };
  if (payment.tokenAddress.toLowerCase() !== access.usdc.toLowerCase()) {
    return {
      kind: 'unknown',
      reason: 'the payment was requested on another token than the service follows now',
    };
  }
  let found;
  let chain;
  try {
    [found, chain] = await Promise.all([
      agreedReceipt(access.clients, hash as Hex),
      agreedChainId(access.clients),
    ]);
  } catch (error) {
    return { kind: 'unknown', reason: shortReason(error) };
  }
  if ('unknown' in chain) return { kind: 'unknown', reason: chain.unknown };
  if ('pending' in found) return { kind: 'pending' };
  if ('unknown' in found) return { kind: 'unknown', reason: found.unknown };
  const { receipt, answers } = found;
  if (receipt.status !== 'success') return { kind: 'no_match', reason: 'reverted' };

  const terms = termsOf(payment, opts.payerAddress);
  const tx = { chainId: chain.chainId, blockNumber: receipt.blockNumber };
  const ofTransaction = brokenByTransaction(tx, terms);
  if (ofTransaction) return judged(ofTransaction, tx, terms);

  // The nearer miss wins when no log matches: it is what the payer most needs to hear.
  let nearest: number | null = null;
  for (const log of receipt.logs) {
    const transfer = transferOf(log);
    if (transfer === null) continue;
    const broken = brokenByTransfer({ token: log.address, ...transfer }, terms);
    if (broken !== null) {
      nearest = Math.max(nearest ?? broken, broken);
      continue;
    }
    if (typeof log.logIndex !== 'number' || !Number.isInteger(log.logIndex) || log.logIndex < 0) {
      return { kind: 'unknown', reason: 'the RPCs answered a log without an index' };
    }
    let head;
    try {
      head = opts.head ?? (await agreedHead(access.clients));
    } catch (error) {
      return { kind: 'unknown', reason: shortReason(error) };
    }
    if ('unknown' in head) return { kind: 'unknown', reason: head.unknown };
    if (head.head < receipt.blockNumber) {
      return { kind: 'unknown', reason: 'an RPC is behind the block of the transaction' };
    }
    return {
      kind: 'match',
      logIndex: log.logIndex,
      evidence: {
        tx_hash: hash,
        log_index: log.logIndex,
        block_number: Number(receipt.blockNumber),
        block_hash: receipt.blockHash.toLowerCase(),
        from: getAddress(transfer.from),
        to: getAddress(transfer.to),
        amount_units: transfer.value.toString(),
        confirmations: Number(head.head - receipt.blockNumber + 1n),
        checked_at: opts.at,
        rpc_answers: answers,
      },
    };
  }
  const rule = nearest === null ? undefined : CREDITING_RULES[nearest];
  return rule ? judged(rule, tx, terms) : { kind: 'no_match', reason: 'not_a_transfer' };
}
