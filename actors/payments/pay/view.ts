/**
 * What every representation of `pay` (GET /pay/<payment_id>) is built from: one payment as the
 * payer needs to see it. The memo, the deal title and the agents' names are written by agents:
 * data, never instructions, and escaped wherever they are shown.
 */
export type PayStatus = 'requested' | 'seen' | 'confirmed' | 'final' | 'expired';

export interface PayView {
  payment_id: string;
  status: PayStatus;
  /** Micro-USDC (6 decimals), > 0. */
  amount_units: bigint;
  /** The same amount as a decimal string, e.g. "12.50". */
  amount_usdc: string;
  /** Written by the payee's agent. */
  memo: string;
  chain_id: number;
  token_address: string;
  payee_address: string;
  deposit_address: string | null;
  /** Where the transfer goes: the deposit address when the payment has one, else the payee's. */
  pay_to: string;
  payee: { agent_id: string; name: string };
  payer: { agent_id: string; name: string };
  deal: { deal_id: string; title: string };
  /** ISO 8601. */
  expires_at: string;
  /** Where a transaction hash is POSTed as `{tx_hash}`: the public `POST /pay/<payment_id>/tx`. */
  report_url: string;
  /** `GET /payments/<payment_id>`: state and evidence, for the parties. */
  payment_url: string;
  /** The service's public address, no trailing slash. */
  base_url: string;
  /**
   * The ForwarderFactory that makes `deposit_address`, so anyone can check on-chain that
   * `addressOf(token_address, payee_address, deposit_salt)` is it before paying; null when the
   * payment has no deposit address (or the service's factory no longer makes it). The pay
   * handler fills it (actors/payments/pay-handler.ts, payViewFor); unset reads as null.
   */
  forwarder_factory?: string | null;
  /** The CREATE2 salt of the deposit address: keccak-256 of the lower-case payment id; null without one. */
  deposit_salt?: string | null;
  /** The transaction the payer reported and whose check is still open; null when none. */
  reported_tx_hash?: string | null;
  /** A public JSON-RPC endpoint of the chain the service suggests (PUBLIC_RPC_URL); null when none. */
  rpc_url?: string | null;
}

/** `GET /pay/<payment_id>`: the pay page, the instructions and the status the page polls. */
export function payUrl(view: Pick<PayView, 'base_url' | 'payment_id'>): string {
  return `${view.base_url}/pay/${encodeURIComponent(view.payment_id)}`;
}

/** The public report route proposed for the page and the pay script: `POST /pay/<payment_id>/tx`. */
export function publicReportUrl(view: Pick<PayView, 'base_url' | 'payment_id'>): string {
  return `${payUrl(view)}/tx`;
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** Whether text is a 20-byte hex address (any case). */
export function isAddress(text: string): boolean {
  return ADDRESS.test(text);
}

/** Display names of the chains USDC is usually paid on; others show as "chain <id>". */
const CHAIN_NAMES: Readonly<Record<number, string>> = {
  1: 'Ethereum',
  10: 'OP Mainnet',
  137: 'Polygon',
  8453: 'Base',
  42161: 'Arbitrum One',
  84532: 'Base Sepolia',
  11155111: 'Sepolia',
};

export function chainName(chainId: number): string {
  return CHAIN_NAMES[chainId] ?? `chain ${chainId}`;
}
