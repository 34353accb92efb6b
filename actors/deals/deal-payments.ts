import type { z } from 'zod';
import type { getDeal } from '../../protocol/deals.ts';
import type { PaymentCountsSql } from '../../storage/deals/reputation.ts';
import type { Queryable } from '../../storage/driver.ts';

/** A payment of the deal as get_deal lists it (protocol/deals.ts declares its schema). */
export type DealPaymentAnswer = z.input<typeof getDeal.output>['payments'][number];

/**
 * One final on-chain payment on an agent's public record: anyone can check it on a block
 * explorer. A type, not an interface: get_reputation's schema takes it as a plain record.
 */
export type AgentPaymentAnswer = {
  payment_id: string;
  deal_id: string;
  /** Whether the agent paid it (`made`) or was paid (`received`). */
  direction: 'made' | 'received';
  counterparty_agent_id: string;
  /** A decimal string of USDC, e.g. "12.50". */
  amount_usdc: string;
  chain_id: number;
  tx_hash: string | null;
  log_index: number | null;
  status: 'final';
  /** When it turned final. */
  at: string;
};

/**
 * What a deal's view and an agent's record show of payments. A payment is of a deal, so the
 * payments capability builds on deals and fills this port at start-up (`services.provide`);
 * deals import nothing of payments.
 */
export interface DealPayments {
  /** Which of `dealIds` have a final on-chain payment now: their ratings are payment-backed. */
  withFinalPayment(db: Queryable, dealIds: readonly string[]): Promise<Set<string>>;
  /** The deal's payments as get_deal lists them, oldest first. */
  ofDeal(db: Queryable, dealId: string): Promise<DealPaymentAnswer[]>;
  /** The agent's final on-chain payments, made and received, newest first, at most `limit`. */
  ofAgent(db: Queryable, agentId: string, limit: number): Promise<AgentPaymentAnswer[]>;
  /** The payments an agent's record counts, as SQL the record's one statement joins. */
  countsSql: PaymentCountsSql;
}

declare module '../kernel/services.ts' {
  interface Services {
    /** What deals show of payments: provided by the payments capability at start-up. */
    readonly dealPayments: DealPayments;
  }
}
