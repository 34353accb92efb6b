/**
 * `pay` for x402 clients: `402 Payment Required` with x402 v2 requirements (coinbase/x402,
 * specs/x402-specification-v2.md and transports-v2/http.md: a base64 JSON `PaymentRequired` in
 * the `PAYMENT-REQUIRED` header, CAIP-2 networks such as `eip155:8453`, `amount` in atomic units).
 *
 * x402's `exact` scheme on EVM: the client signs an EIP-3009 `transferWithAuthorization` for
 * exactly `amount` to `payTo` and retries with `PAYMENT-SIGNATURE` (or v1 `X-PAYMENT`); the
 * service checks it against the payment (./x402-authorization.ts) and hands it to the
 * facilitator the operator names, or keeps it for the payee to submit (./x402-settle.ts). The
 * service holds no key and no money either way: the token moves it from payer to `payTo`.
 * Sending the transfer oneself and reporting its hash stays open too (`direct-transfer`).
 *
 * Spotting an x402 client: the spec gives a client no way to announce itself on a first request
 * (it simply reacts to a 402), and most callers of `pay` want the JSON instructions. So `pay`
 * answers 402 when asked with `?x402=1` (the instructions carry that `x402_url`) and takes a
 * request that carries `PAYMENT-SIGNATURE` or `X-PAYMENT` as a signed payment.
 */
import type { TokenDomain } from '../chain/token-domain.ts';
import { eip681Link } from './eip681.ts';
import { payUrl, type PayView } from './view.ts';

const X402_VERSION = 2;

/** The response header that carries the requirements (HTTP transport, v2). */
export const PAYMENT_REQUIRED_HEADER = 'payment-required';

/** x402 `PaymentRequirements` (v2), one entry of `accepts`. */
interface X402PaymentRequirements {
  scheme: 'exact';
  network: `eip155:${number}`;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: Record<string, unknown>;
}

/** x402 `PaymentRequired` (v2). */
export interface X402PaymentRequired {
  x402Version: 2;
  error: string;
  resource: { url: string; description: string; mimeType: string };
  accepts: X402PaymentRequirements[];
  extensions: Record<string, { info: Record<string, unknown>; schema: Record<string, unknown> }>;
}

/**
 * The EIP-712 domain (name, version) of USDC's EIP-3009 on the chains it is usually paid on, for
 * when the token's own could not be read from the chain (../chain/token-domain.ts). A token
 * neither read nor listed here gets no name and version: better none than a wrong domain.
 */
const USDC_DOMAINS: Readonly<Record<string, { name: string; version: string }>> = {
  '1:0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48': { name: 'USD Coin', version: '2' },
  '8453:0x833589fcd6edb6e08f4c7c32d4f71b54bda02913': { name: 'USD Coin', version: '2' },
  '84532:0x036cbd53842c5426634e7929541ec2318f3dcf7e': { name: 'USDC', version: '2' },
};

const HOW =
  'Sign an EIP-3009 transferWithAuthorization for exactly `amount` of `asset` to `payTo`, ' +
  'valid now and until at most `maxTimeoutSeconds` from now (the payment expires then), with ' +
  'the token’s EIP-712 domain (`extra.name`, `extra.version`), and retry this URL with it in ' +
  'PAYMENT-SIGNATURE (x402 v2; X-PAYMENT for v1). The money moves straight from you to ' +
  '`payTo` on-chain (the service holds no key and no money); the payment is credited when the ' +
  'transfer is seen. Or send the transfer yourself and POST {"tx_hash"} to the report URL.';

const DIRECT =
  'Instead of signing: call transfer(payTo, amount) on the asset contract on this network ' +
  'yourself, then POST {"tx_hash"} to the report URL. The service verifies the transfer ' +
  'on-chain; payments are final.';

/** How long a payer may take: until the payment expires (a transfer after expiry is not credited). */
function secondsLeft(expiresAt: string, now: Date): number {
  const left = Math.floor((Date.parse(expiresAt) - now.getTime()) / 1000);
  return Number.isFinite(left) && left > 0 ? left : 0;
}

export interface X402Options {
  /** Why the signed payment the request carried was not taken: its rule and words. */
  refusal?: { rule: string; message: string };
  /**
   * The token's EIP-712 domain as its contract states it (../chain/token-domain.ts), which x402's
   * `exact` scheme signs over: `extra.name` and `extra.version`. Null or absent: the known USDC
   * deployments' domain, or none.
   */
  domain?: TokenDomain | null;
}

/** The `PaymentRequired` object for this payment (answer it with status 402 while `requested`). */
export function x402Requirements(
  view: PayView,
  now: Date,
  options: X402Options = {},
): X402PaymentRequired {
  const domain = options.domain ?? knownDomain(view);
  const eip681 = eip681Link(view);
  const { refusal } = options;
  return {
    x402Version: X402_VERSION,
    error: refusal
      ? `${refusal.rule}: ${refusal.message} The signed payment was neither used nor kept.`
      : `Payment required. ${HOW}`,
    resource: {
      url: payUrl(view),
      description:
        `Payment ${view.payment_id}: ${view.amount_usdc} USDC for a deal on this service. ` + HOW,
      mimeType: 'application/json',
    },
    accepts: [
      {
        scheme: 'exact',
        network: `eip155:${view.chain_id}`,
        amount: view.amount_units.toString(),
        asset: view.token_address,
        payTo: view.pay_to,
        maxTimeoutSeconds: secondsLeft(view.expires_at, now),
        extra: {
          ...(domain ? { name: domain.name, version: domain.version } : {}),
          settlement: 'authorization-or-direct-transfer',
          report_url: view.report_url,
        },
      },
    ],
    extensions: {
      'direct-transfer': {
        info: {
          how: DIRECT,
          report_url: view.report_url,
          payment_url: view.payment_url,
          eip681,
          ...(view.deposit_address
            ? {
                deposit_address: view.deposit_address,
                note: 'payTo is this payment’s own deposit address: a transfer from any wallet or exchange counts.',
              }
            : {
                note: 'payTo is the payee’s address: only a transfer from the payer’s registered payout address counts.',
              }),
        },
        schema: {
          type: 'object',
          properties: {
            how: { type: 'string' },
            report_url: { type: 'string', format: 'uri' },
            payment_url: { type: 'string', format: 'uri' },
            eip681: { type: 'string' },
            deposit_address: { type: 'string' },
            note: { type: 'string' },
          },
          required: ['how', 'report_url', 'eip681'],
        },
      },
    },
  };
}

/** The EIP-712 domain of the known USDC deployments, for when the token's own could not be read. */
export function knownDomain(view: Pick<PayView, 'chain_id' | 'token_address'>): TokenDomain | null {
  return USDC_DOMAINS[`${view.chain_id}:${view.token_address.toLowerCase()}`] ?? null;
}

/** The `PAYMENT-REQUIRED` header value: the object as base64 JSON. */
export function paymentRequiredHeader(required: X402PaymentRequired): string {
  return Buffer.from(JSON.stringify(required), 'utf8').toString('base64');
}

/** Request headers by lower-case name, as the HTTP door hands them. */
export type RequestHeaders = Readonly<Record<string, string | undefined>>;

/** Whether the request carries a signed x402 payment (v2 `PAYMENT-SIGNATURE`, v1 `X-PAYMENT`). */
export function carriesX402Signature(headers: RequestHeaders): boolean {
  return Boolean(headers['payment-signature'] || headers['x-payment']);
}

/** Whether `pay` should answer this request with 402 and x402 requirements. */
export function isX402Client(
  headers: RequestHeaders,
  query: Readonly<Record<string, string | undefined>> = {},
): boolean {
  return carriesX402Signature(headers) || query.x402 === '1';
}
