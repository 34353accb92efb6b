/**
 * `pay` with a signed x402 payment (`PAYMENT-SIGNATURE` or `X-PAYMENT`): the one call in which an
 * x402 client pays a requested payment, straight from payer to payee.
 *
 * 1. The signed payment is checked against this payment (./x402-authorization.ts): anything
 *    off answers 402 again, with `error` naming the rule, and nothing is kept.
 * 2. With a facilitator (X402_FACILITATOR_URL) it is verified there first: a refusal answers
 *    402 and nothing is kept.
 * 3. It is kept, its nonce claimed for this payment (one authorization pays one payment once;
 *    a payment takes one live authorization), and the payee is told (`payment.authorized`).
 * 4. With a facilitator it is settled there, and the facilitator's transaction is checked
 *    on-chain like any reported one (../report-handlers.ts): credited only when the transfer
 *    pays this payment by the crediting rules.
 * 5. The answer: 200 with `PAYMENT-RESPONSE` (x402 v2 SettlementResponse) and the instructions
 *    (now showing the payment seen) once the transfer is seen; before that, 202 with the
 *    payment's state, to ask again (or to wait for `payment.seen`).
 */
import { reply, type Reply } from '../../../protocol/binding.ts';
import { ServiceError } from '../../../protocol/errors.ts';
import { findPayment, type PaymentRow } from '../../../storage/payments/payments.ts';
import { findPayoutAddress } from '../../../storage/payments/payout-addresses.ts';
import {
  authorizationOf,
  claimAuthorization,
  recordSettlement,
  type AuthorizationRow,
  type Claim,
} from '../../../storage/payments/x402-authorizations.ts';
import type { Services } from '../../kernel/services.ts';
import type { ChainAccess } from '../chain/clients.ts';
import { tokenDomain, type TokenDomain } from '../chain/token-domain.ts';
import { checkReportedTx } from '../tx-check.ts';
import { paymentStatusAnswer } from '../payment-view.ts';
import { facilitatorSettle, facilitatorVerify, type FacilitatorRequest } from './facilitator.ts';
import { payInstructions } from './instructions.ts';
import type { PayView } from './view.ts';
import {
  checkAuthorization,
  decodeSignedPayment,
  X402Refusal,
  type SignedPayment,
} from './x402-authorization.ts';
import {
  knownDomain,
  PAYMENT_REQUIRED_HEADER,
  paymentRequiredHeader,
  x402Requirements,
} from './x402.ts';

/** The response header of a settled x402 payment (HTTP transport, v2). */
export const PAYMENT_RESPONSE_HEADER = 'payment-response';

const NOT_KEPT = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

/** A 402 that refuses a signed payment: the requirements again, `error` naming the rule. */
async function refused(
  services: Services,
  view: PayView,
  refusal: { rule: string; message: string },
): Promise<Reply> {
  const required = x402Requirements(view, new Date(services.clock.now()), {
    domain: await tokenDomain(services.chain, view.chain_id, view.token_address),
    refusal,
  });
  return reply(402, required, {
    ...NOT_KEPT,
    [PAYMENT_REQUIRED_HEADER]: paymentRequiredHeader(required),
  });
}

function paymentResponse(view: PayView, transaction: string, payer: string): string {
  const settled = { success: true, transaction, network: `eip155:${view.chain_id}`, payer };
  return Buffer.from(JSON.stringify(settled), 'utf8').toString('base64');
}

/** The answer once the payment is paid: the instructions (showing it so), with PAYMENT-RESPONSE. */
function paid(view: PayView, row: PaymentRow, kept: AuthorizationRow, transaction: string): Reply {
  return reply(200, payInstructions(view), {
    ...NOT_KEPT,
    [PAYMENT_RESPONSE_HEADER]: paymentResponse(view, transaction, kept.fromAddress),
  });
}

/** The answer while the transfer is not seen yet: 202 with the payment's state. */
function pending(row: PaymentRow, kept: AuthorizationRow, chain: ChainAccess): Reply {
  const settlement = chain.facilitatorUrl && kept.settleError === null ? 'facilitator' : 'payee';
  return reply(
    202,
    {
      ...paymentStatusAnswer(row),
      settlement,
      settled_tx_hash: kept.settledTxHash,
      settle_error: kept.settleError,
    },
    NOT_KEPT,
  );
}

const SEEN = new Set(['seen', 'confirmed', 'final']);

/** The request the facilitator is sent: the payload as the client signed it, our requirements. */
function facilitatorRequest(
  signed: SignedPayment,
  view: PayView,
  services: Services,
  domain: TokenDomain | null,
) {
  const required = x402Requirements(view, new Date(services.clock.now()), { domain });
  return {
    x402Version: signed.x402Version,
    paymentPayload: signed.payload,
    paymentRequirements: required.accepts[0] as unknown as Record<string, unknown>,
  } satisfies FacilitatorRequest;
}

/**
 * Takes the signed payment a `pay` request carries for `row` (shown as `view`): the whole flow
 * above. `headers` are the request's, which carry it.
 */
export async function takeSignedPayment(
  services: Services,
  row: PaymentRow,
  view: PayView,
  headers: Readonly<Record<string, string | undefined>>,
): Promise<Reply> {
  const chain = services.chain;
  // A payment no longer requested takes nothing: a retry of the signed payment that paid it is
  // answered as then; anything else is refused, whatever its form.
  if (row.status !== 'requested') {
    let nonce: string | null = null;
    try {
      nonce = decodeSignedPayment(headers)?.authorization.nonce ?? null;
    } catch {
      nonce = null;
    }
    const kept = nonce === null ? null : await authorizationOf(services.db(), row.paymentId);
    const transaction = row.status === 'expired' ? null : seenTransaction(row);
    if (kept && kept.nonce === nonce && transaction) return paid(view, row, kept, transaction);
    throw new ServiceError(
      'payment_not_payable',
      `This payment is ${row.status}: there is nothing to pay, and the signed payment was neither used nor kept.`,
      { status: row.status },
    );
  }
  let signed: SignedPayment | null;
  try {
    signed = decodeSignedPayment(headers);
  } catch (error) {
    if (error instanceof X402Refusal) return refused(services, view, error);
    throw error;
  }
  if (!signed || !chain) {
    return refused(services, view, {
      rule: 'malformed',
      message: chain
        ? 'No signed payment.'
        : 'This service checks no payment on-chain, so it takes no signed payment.',
    });
  }

  const nowSeconds = BigInt(Math.floor(services.clock.now() / 1000));
  const [payer, domain] = await Promise.all([
    findPayoutAddress(services.db(), row.payerAgentId),
    tokenDomain(chain, view.chain_id, view.token_address),
  ]);
  const signedOver = domain ?? knownDomain(view);
  let authorization;
  try {
    authorization = await checkAuthorization(signed, view, {
      nowSeconds,
      domain: signedOver,
      payerAddress: payer?.address ?? null,
    });
  } catch (error) {
    if (error instanceof X402Refusal) return refused(services, view, error);
    throw error;
  }

  const request = facilitatorRequest(signed, view, services, signedOver);
  // A facilitator that says no refuses the signed payment; one that cannot be asked leaves it
  // to the payee, since the service checked it already.
  let unreachable: string | null = null;
  if (chain.facilitatorUrl) {
    const verified = await facilitatorVerify(chain.facilitatorUrl, request);
    if (!verified.ok && verified.kind === 'refused') {
      return refused(services, view, { rule: 'facilitator_refused', message: verified.error });
    }
    if (!verified.ok) unreachable = verified.error;
  }
  const facilitated = chain.facilitatorUrl !== null && unreachable === null;

  const candidate: AuthorizationRow = {
    chainId: view.chain_id,
    tokenAddress: view.token_address.toLowerCase(),
    fromAddress: authorization.from,
    nonce: authorization.nonce,
    paymentId: row.paymentId,
    toAddress: authorization.to,
    valueUnits: authorization.value,
    validAfter: authorization.validAfter,
    validBefore: authorization.validBefore,
    signature: authorization.signature,
    x402Version: signed.x402Version,
    receivedAt: new Date(services.clock.now()),
    settledTxHash: null,
    settleError: unreachable,
  };
  // The payee is offered the authorization to submit when no facilitator will: at once, or
  // once the facilitator failed to settle it.
  const offer = () => ({
    agentId: row.payeeAgentId,
    type: 'payment.authorized' as const,
    workspaceId: row.workspaceId,
    data: {
      payment_id: row.paymentId,
      deal_id: row.dealId,
      amount_usdc: view.amount_usdc,
      payer_agent_id: row.payerAgentId,
      settlement: 'payee' as const,
      authorization: {
        from: candidate.fromAddress,
        to: candidate.toAddress,
        value: candidate.valueUnits.toString(),
        valid_after: candidate.validAfter.toString(),
        valid_before: candidate.validBefore.toString(),
        nonce: candidate.nonce,
        signature: candidate.signature,
      },
    },
  });
  const claim = await services.commit<Claim>(async (tx) => {
    const claimed = await claimAuthorization(tx, candidate, nowSeconds);
    if (claimed.kind !== 'kept' || facilitated) return { result: claimed };
    return { result: claimed, changes: [offer()] };
  });
  if (claim.kind === 'nonce_used') {
    return refused(services, view, {
      rule: 'nonce_used',
      message:
        'This authorization’s nonce was already taken, for this payment or another: one authorization pays one payment once. Sign a new one (a new nonce).',
    });
  }
  if (claim.kind === 'already_authorized') {
    return refused(services, view, {
      rule: 'already_authorized',
      message: `This payment already holds a signed payment (nonce ${claim.row.nonce}) valid until ${claim.row.validBefore}: a payment takes one at a time, so that it is never paid twice. Wait for it to be settled, or until it expires.`,
    });
  }

  let kept = claim.row;
  const unsettled = kept.settledTxHash === null && kept.settleError === null;
  if (chain.facilitatorUrl && facilitated && unsettled) {
    const settled = await facilitatorSettle(chain.facilitatorUrl, request);
    const outcome: { txHash: string } | { error: string } =
      settled.ok && settled.transaction
        ? { txHash: settled.transaction }
        : { error: settled.ok ? 'no transaction' : settled.error };
    await services.commit(async (tx) => {
      await recordSettlement(tx, kept, outcome);
      return { result: undefined, changes: 'error' in outcome ? [offer()] : [] };
    });
    kept = {
      ...kept,
      settledTxHash: 'txHash' in outcome ? outcome.txHash : null,
      settleError: 'error' in outcome ? outcome.error : null,
    };
  }
  if (kept.settledTxHash) {
    // The facilitator's word is not believed: its transaction is checked on-chain like any.
    await checkReportedTx(services, row, kept.settledTxHash).catch((error: unknown) => {
      if (!(error instanceof ServiceError)) throw error;
    });
  }
  const now = await findPayment(services.db(), row.paymentId);
  if (!now) throw new Error(`payment ${row.paymentId} vanished`);
  const transaction = seenTransaction(now);
  if (SEEN.has(now.status) && transaction) {
    return paid({ ...view, status: now.status }, now, kept, transaction);
  }
  return pending(now, kept, chain);
}

/** The transaction that credited the payment, once one did. */
function seenTransaction(row: PaymentRow): string | null {
  return paymentStatusAnswer(row).tx_hash;
}
