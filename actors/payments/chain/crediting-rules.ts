/**
 * The crediting rules: when one `Transfer` log pays one payment. This table is the only place
 * they are written; ./verify.ts judges every transfer by it (the payer's report, the public
 * report and the watcher alike) and ./credit.ts enforces its last row in the database. Every
 * rule must hold. A transaction whose transfers all break one is judged by the transfer that
 * came nearest (broke the latest rule): that is what its payer most needs to hear.
 *
 * Before any rule, the transaction must be in a block on every RPC and must not have reverted
 * (a reverted one moved nothing; ./verify.ts says `reverted`), and a transaction with no ERC-20
 * `Transfer` at all is `not_a_transfer`.
 */

/** What the chain shows of the transaction, the same for each of its logs. */
export interface TransactionFacts {
  /** The chain every RPC says it serves (`eth_chainId`), not the one configured. */
  chainId: number;
  /** The block the transaction is in. */
  blockNumber: bigint;
}

/** What the chain shows of one `Transfer` log, as every RPC agreed on it. */
export interface TransferFacts {
  /** The contract that emitted the log. */
  token: string;
  from: string;
  to: string;
  value: bigint;
}

/** What the payment asks for, fixed when it was requested. */
export interface CreditTerms {
  chainId: number;
  tokenAddress: string;
  depositAddress: string | null;
  payeeAddress: string;
  /** micro-USDC. */
  amountUnits: bigint;
  /** The chain's head when the payment was requested; null: unknown (nothing credits it). */
  requestedAtBlock: number | null;
  /** The payer's registered payout address; null: a transfer to the payee address never counts. */
  payerAddress: string | null;
}

/** Why a transfer does not pay the payment: the `reason` an agent reads. */
export type Breach =
  | 'wrong_chain'
  | 'wrong_token'
  | 'wrong_recipient'
  | 'wrong_sender'
  | 'short_amount'
  | 'before_request'
  | 'already_credited';

export type CreditingRuleName =
  'chain' | 'token' | 'recipient' | 'sender' | 'amount' | 'after_request' | 'once';

interface RuleOf<Scope, Judge> {
  name: CreditingRuleName;
  breach: Breach;
  /**
   * What breaking it answers: `refused` (the transfer never pays this payment: a 4xx the payer
   * can act on) or `undecided` (the service itself is in doubt, say its RPCs serve another
   * chain: "unknown", checked again, never "failed", so nobody pays twice on it).
   */
  outcome: 'refused' | 'undecided';
  /**
   * What it is judged on: the transaction (judged first: whatever it holds, a transaction on
   * another chain or from before the request pays nothing), each `Transfer` log in it, or the
   * database: the unique keys of `payment_credits` (chain, tx hash, log index), in the
   * transaction that credits (./credit.ts), so two credits at once cannot both win.
   */
  scope: Scope;
  holds: Judge;
  /** The rule in words, as /pay/protocol and a refusal's detail say it. */
  says: string;
}

export type CreditingRule =
  | RuleOf<'transaction', (tx: TransactionFacts, terms: CreditTerms) => boolean>
  | RuleOf<'transfer', (transfer: TransferFacts, terms: CreditTerms) => boolean>
  | RuleOf<'database', null>;

const same = (a: string | null, b: string | null) =>
  a !== null && b !== null && a.toLowerCase() === b.toLowerCase();

const toDeposit = (t: TransferFacts, p: CreditTerms) => same(t.to, p.depositAddress);

/** Transaction rules first; among transfer rules, a later one broken is a nearer miss. */
export const CREDITING_RULES: readonly CreditingRule[] = [
  {
    name: 'chain',
    breach: 'wrong_chain',
    outcome: 'undecided',
    scope: 'transaction',
    holds: (tx, p) => tx.chainId === p.chainId,
    says: 'it is on the chain the payment was requested on (every RPC must say it serves that chain id)',
  },
  {
    name: 'after_request',
    breach: 'before_request',
    outcome: 'refused',
    scope: 'transaction',
    holds: (tx, p) => p.requestedAtBlock !== null && tx.blockNumber > BigInt(p.requestedAtBlock),
    says: 'it is in a block after the chain’s head when the payment was requested (`requested_at_block`): a transfer made before the request never pays it',
  },
  {
    name: 'token',
    breach: 'wrong_token',
    outcome: 'refused',
    scope: 'transfer',
    holds: (t, p) => same(t.token, p.tokenAddress),
    says: 'it is a Transfer emitted by the payment’s USDC contract itself (the same event from any other contract is another token)',
  },
  {
    name: 'recipient',
    breach: 'wrong_recipient',
    outcome: 'refused',
    scope: 'transfer',
    holds: (t, p) => toDeposit(t, p) || same(t.to, p.payeeAddress),
    says: 'it goes to the payment’s deposit address or to its payee address',
  },
  {
    name: 'sender',
    breach: 'wrong_sender',
    outcome: 'refused',
    scope: 'transfer',
    holds: (t, p) => toDeposit(t, p) || same(t.from, p.payerAddress),
    says: 'a transfer to the payee address comes from the payer’s payout address (one to the deposit address may come from anyone)',
  },
  {
    name: 'amount',
    breach: 'short_amount',
    outcome: 'refused',
    scope: 'transfer',
    holds: (t, p) => t.value >= p.amountUnits,
    says: 'it is of at least the amount asked',
  },
  {
    name: 'once',
    breach: 'already_credited',
    outcome: 'refused',
    scope: 'database',
    holds: null,
    says: 'it has not credited a payment already (a transfer pays one payment, ever)',
  },
];

/** The first transaction rule the transaction breaks, or null when it keeps them all. */
export function brokenByTransaction(
  tx: TransactionFacts,
  terms: CreditTerms,
): CreditingRule | null {
  for (const rule of CREDITING_RULES) {
    if (rule.scope === 'transaction' && !rule.holds(tx, terms)) return rule;
  }
  return null;
}

/**
 * How near a transfer came: the position of the first transfer rule it breaks (a later one is
 * nearer), or null when it keeps them all.
 */
export function brokenByTransfer(transfer: TransferFacts, terms: CreditTerms): number | null {
  for (const [index, rule] of CREDITING_RULES.entries()) {
    if (rule.scope === 'transfer' && !rule.holds(transfer, terms)) return index;
  }
  return null;
}
