/**
 * A signed x402 payment (`PAYMENT-SIGNATURE`, x402 v2; `X-PAYMENT`, v1) checked against the one
 * payment it claims to pay, before anything is kept or sent on. x402's `exact` scheme on EVM
 * carries an EIP-3009 `transferWithAuthorization`: the payer's signature lets anyone move
 * `value` of the token from `from` to `to` once (its nonce), between `validAfter` and
 * `validBefore`. The token enforces that; the service makes sure that what it moves is exactly
 * this payment, to where this payment is credited, so that no authorization it accepts can move
 * money that would not count.
 *
 * Every refusal names its rule (`X402Rule`), and the 402 that carries it says what to change.
 * The rules are checked in a fixed order, the cheap ones first; the signature is recovered last
 * among the stateless ones. Nonces (one authorization pays one payment once) are the store's.
 */
import { recoverTypedDataAddress, type Hex } from 'viem';
import type { TokenDomain } from '../chain/token-domain.ts';
import type { PayView } from './view.ts';

/** Why a signed payment was not taken, as the 402's `error` names it. */
export type X402Rule =
  | 'malformed'
  | 'unsupported_scheme'
  | 'wrong_network'
  | 'wrong_asset'
  | 'wrong_recipient'
  | 'wrong_amount'
  | 'not_yet_valid'
  | 'expired'
  | 'outlives_payment'
  | 'not_payout_address'
  | 'domain_unknown'
  | 'invalid_signature'
  | 'nonce_used'
  | 'already_authorized';

export class X402Refusal extends Error {
  constructor(
    readonly rule: X402Rule,
    message: string,
  ) {
    super(message);
  }
}

/** An EIP-3009 authorization as the token's `transferWithAuthorization` takes it. */
export interface Authorization {
  from: `0x${string}`;
  to: `0x${string}`;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
  signature: Hex;
}

/** A decoded signed payment: its authorization and the payload as sent (for a facilitator). */
export interface SignedPayment {
  x402Version: 1 | 2;
  authorization: Authorization;
  /** The PaymentPayload as the client sent it, handed on unchanged to a facilitator. */
  payload: Record<string, unknown>;
}

/** Far more than any PaymentPayload of the `exact` scheme (~1.5 KiB): a longer header is refused unread. */
export const MAX_PAYMENT_HEADER_BYTES = 16 * 1024;

/** Seconds a facilitator needs to get the transfer into a block: an authorization expiring sooner is refused. */
export const SETTLEMENT_MARGIN_SECONDS = 6;

/** x402 v1 network names (coinbase/x402 specs v1) of the chains USDC is usually paid on. */
const V1_NETWORKS: Readonly<Record<string, number>> = {
  base: 8453,
  'base-sepolia': 84532,
  ethereum: 1,
  sepolia: 11155111,
  polygon: 137,
  arbitrum: 42161,
  optimism: 10,
};

/** EIP-3009's typed data (the token's `TRANSFER_WITH_AUTHORIZATION_TYPEHASH`). */
const AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const NONCE = /^0x[0-9a-fA-F]{64}$/;
/** 65 bytes: r, s, v, as EOAs sign and the token's `bytes signature` overload takes. */
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/;
const UINT = /^(0|[1-9][0-9]{0,77})$/;

const malformed = (what: string) =>
  new X402Refusal(
    'malformed',
    `The signed payment is malformed: ${what}. Send PAYMENT-SIGNATURE as base64 of x402 v2's PaymentPayload JSON, whose \`payload\` holds \`signature\` and \`authorization\` {from, to, value, validAfter, validBefore, nonce}.`,
  );

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function uint(value: unknown, field: string): bigint {
  const text = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof text !== 'string' || !UINT.test(text)) {
    throw malformed(`authorization.${field} is not a decimal integer string`);
  }
  return BigInt(text);
}

function hex(value: unknown, pattern: RegExp, field: string): `0x${string}` {
  if (typeof value !== 'string' || !pattern.test(value)) {
    throw malformed(
      `${field} is not ${pattern === ADDRESS ? 'a 20-byte' : 'the right length of'} hex`,
    );
  }
  return value.toLowerCase() as `0x${string}`;
}

/**
 * The signed payment a request carries, decoded; null when it carries none. Throws an
 * X402Refusal (`malformed`) for one that cannot be read: too long, not base64 JSON, or without
 * an EIP-3009 authorization and its 65-byte signature.
 */
export function decodeSignedPayment(
  headers: Readonly<Record<string, string | undefined>>,
): SignedPayment | null {
  const header = headers['payment-signature'] ?? headers['x-payment'];
  if (!header) return null;
  if (header.length > MAX_PAYMENT_HEADER_BYTES) {
    throw malformed(`it is longer than ${MAX_PAYMENT_HEADER_BYTES} bytes`);
  }
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(header.trim(), 'base64').toString('utf8'));
  } catch {
    throw malformed('it is not base64 of a JSON object');
  }
  if (!isObject(decoded)) throw malformed('it is not base64 of a JSON object');
  const version = decoded.x402Version;
  if (version !== 1 && version !== 2) throw malformed('`x402Version` is neither 1 nor 2');
  const payload = decoded.payload;
  if (!isObject(payload) || !isObject(payload.authorization)) {
    throw malformed('`payload.authorization` is missing');
  }
  const signed = payload.authorization;
  return {
    x402Version: version,
    payload: decoded,
    authorization: {
      from: hex(signed.from, ADDRESS, 'authorization.from'),
      to: hex(signed.to, ADDRESS, 'authorization.to'),
      value: uint(signed.value, 'value'),
      validAfter: uint(signed.validAfter, 'validAfter'),
      validBefore: uint(signed.validBefore, 'validBefore'),
      nonce: hex(signed.nonce, NONCE, 'authorization.nonce'),
      signature: hex(payload.signature, SIGNATURE, 'payload.signature (65 bytes)'),
    },
  };
}

/** The scheme, network and asset the payload says it pays with (v2 `accepted`; v1 top level). */
function claimed(signed: SignedPayment): { scheme: unknown; network: unknown; asset: unknown } {
  const { payload } = signed;
  if (signed.x402Version === 2) {
    const accepted = isObject(payload.accepted) ? payload.accepted : {};
    return { scheme: accepted.scheme, network: accepted.network, asset: accepted.asset };
  }
  return { scheme: payload.scheme, network: payload.network, asset: undefined };
}

function chainIdOf(network: unknown): number | null {
  if (typeof network !== 'string') return null;
  const caip = /^eip155:([1-9][0-9]{0,15})$/.exec(network);
  if (caip) return Number(caip[1]);
  return V1_NETWORKS[network] ?? null;
}

/** What the checks need to know besides the payment. */
export interface CheckContext {
  /** Seconds since the epoch, by the service's clock. */
  nowSeconds: bigint;
  /** The token's EIP-712 domain, read from the chain (or the known USDC deployments'); null: unknown. */
  domain: TokenDomain | null;
  /**
   * The payer's registered payout address: a transfer to the payee's own address counts only
   * from it (../chain/crediting-rules.ts). Null when it has none.
   */
  payerAddress: string | null;
}

/**
 * Checks that `signed` pays exactly `view` (a payment still `requested`) and that `from`
 * signed it; throws the X402Refusal of the first rule it breaks. Nonces are not checked here.
 */
export async function checkAuthorization(
  signed: SignedPayment,
  view: PayView,
  context: CheckContext,
): Promise<Authorization> {
  const { authorization } = signed;
  const { scheme, network, asset } = claimed(signed);
  if (scheme !== 'exact') {
    throw new X402Refusal(
      'unsupported_scheme',
      `This service takes x402's \`exact\` scheme only (an EIP-3009 authorization), not ${JSON.stringify(scheme ?? null)}.`,
    );
  }
  if (chainIdOf(network) !== view.chain_id) {
    throw new X402Refusal(
      'wrong_network',
      `This payment is on eip155:${view.chain_id}, not ${JSON.stringify(network ?? null)}.`,
    );
  }
  if (
    asset !== undefined &&
    (typeof asset !== 'string' || asset.toLowerCase() !== view.token_address.toLowerCase())
  ) {
    throw new X402Refusal(
      'wrong_asset',
      `This payment is paid in the token ${view.token_address}, not ${JSON.stringify(asset)}.`,
    );
  }
  if (authorization.to !== view.pay_to.toLowerCase()) {
    throw new X402Refusal(
      'wrong_recipient',
      `The authorization pays ${authorization.to}; this payment is paid to ${view.pay_to} (payTo).`,
    );
  }
  if (authorization.value !== view.amount_units) {
    throw new X402Refusal(
      'wrong_amount',
      `The authorization moves ${authorization.value} units; this payment is exactly ${view.amount_units} (${view.amount_usdc} USDC).`,
    );
  }
  if (authorization.validAfter > context.nowSeconds) {
    throw new X402Refusal(
      'not_yet_valid',
      `The authorization is valid only after ${authorization.validAfter} (seconds since 1970), and it is ${context.nowSeconds} now: sign one valid from now.`,
    );
  }
  if (authorization.validBefore <= context.nowSeconds + BigInt(SETTLEMENT_MARGIN_SECONDS)) {
    throw new X402Refusal(
      'expired',
      `The authorization expires at ${authorization.validBefore} (seconds since 1970), too soon to settle: it must be valid for at least ${SETTLEMENT_MARGIN_SECONDS} more seconds. Sign a new one.`,
    );
  }
  const expiresAt = BigInt(Math.floor(Date.parse(view.expires_at) / 1000));
  if (authorization.validBefore > expiresAt) {
    throw new X402Refusal(
      'outlives_payment',
      `The authorization is valid until ${authorization.validBefore}, after the payment expires (${expiresAt}, ${view.expires_at}): a transfer after that is not credited. Sign one with validBefore at most ${expiresAt} (maxTimeoutSeconds says how long is left).`,
    );
  }
  if (view.deposit_address === null) {
    const payer = context.payerAddress?.toLowerCase() ?? null;
    if (authorization.from !== payer) {
      throw new X402Refusal(
        'not_payout_address',
        payer === null
          ? 'This payment is paid to the payee’s own address, which credits a transfer only from the payer’s registered payout address, and the payer has none: set one (set_payout_address) and sign from it.'
          : `This payment is paid to the payee’s own address, which credits a transfer only from the payer’s payout address ${payer}; the authorization is from ${authorization.from}. Sign from the payout address.`,
      );
    }
  }
  if (!context.domain) {
    throw new X402Refusal(
      'domain_unknown',
      'The token’s EIP-712 domain (name, version) could not be read from the chain just now, so no signature can be checked. Retry in a minute, or pay by a direct transfer.',
    );
  }
  let signer: string;
  try {
    signer = await recoverTypedDataAddress({
      domain: {
        name: context.domain.name,
        version: context.domain.version,
        chainId: view.chain_id,
        verifyingContract: view.token_address as `0x${string}`,
      },
      types: AUTHORIZATION_TYPES,
      primaryType: 'TransferWithAuthorization',
      message: {
        from: authorization.from,
        to: authorization.to,
        value: authorization.value,
        validAfter: authorization.validAfter,
        validBefore: authorization.validBefore,
        nonce: authorization.nonce,
      },
      signature: authorization.signature,
    });
  } catch {
    signer = '';
  }
  if (signer.toLowerCase() !== authorization.from) {
    throw new X402Refusal(
      'invalid_signature',
      `The signature is not ${authorization.from}'s over this authorization with the token's EIP-712 domain (name ${JSON.stringify(context.domain.name)}, version ${JSON.stringify(context.domain.version)}, chainId ${view.chain_id}, verifyingContract ${view.token_address}).`,
    );
  }
  return authorization;
}
