import { html, reply, type Reply } from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { findPayment, type PaymentRow } from '../../storage/payments/payments.ts';
import type { Handler } from '../kernel/handler.ts';
import { notFound } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import { depositAddress, depositSalt } from './chain/deposit-address.ts';
import { tokenDomain } from './chain/token-domain.ts';
import { payInstructions, type PayInstructions } from './pay/instructions.ts';
import { payRepresentation } from './pay/negotiate.ts';
import { PAY_PAGE_CSP, payPageHtml } from './pay/page.ts';
import type { PayView } from './pay/view.ts';
import {
  carriesX402Signature,
  knownDomain,
  PAYMENT_REQUIRED_HEADER,
  paymentRequiredHeader,
  x402Requirements,
} from './pay/x402.ts';
import { takeSignedPayment } from './pay/x402-settle.ts';
import { payViewOf } from './payment-view.ts';

/**
 * `pay` (GET /pay/<payment_id>, no token): one payment in the form its caller takes
 * (protocol/payments/pay-binding.ts). The JSON instructions for agents (and always over MCP, which hands
 * no headers); the page for a browser; 402 with x402 requirements for an x402 client, only while
 * the payment is `requested` (past that there is nothing to pay, and a 402 would say otherwise);
 * and a signed x402 payment taken in the same call (pay/x402-settle.ts).
 * Nothing of it is cached: the status moves.
 */
export const pay: Handler<'pay'> = async ({ services, headers }, input) => {
  const row = await findPayment(services.db(), input.payment_id);
  if (!row) throw notFound('payment');
  const view = await payViewFor(services, row);
  const representation = payRepresentation(headers, { x402: input.x402 });
  // A signed x402 payment: the one call that pays (pay/x402-settle.ts).
  if (carriesX402Signature(headers)) {
    return (await takeSignedPayment(services, row, view, headers)) as Reply<PayInstructions>;
  }
  if (representation === 'x402' && view.status === 'requested') {
    return requirementsReply(services, view);
  }
  if (representation === 'html') {
    const domain =
      (await tokenDomain(services.chain, view.chain_id, view.token_address)) ?? knownDomain(view);
    return reply(200, html(await payPageHtml(view, domain)), {
      ...NOT_KEPT,
      'content-security-policy': PAY_PAGE_CSP,
      'referrer-policy': 'no-referrer',
    });
  }
  return reply(200, payInstructions(view), NOT_KEPT);
};

const NOT_KEPT = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };

/**
 * `pay_x402` (POST /pay/<payment_id>, no token): the signed payment from its header, or from
 * `payment_signature` (MCP and mail send no headers), taken as `pay`'s signed retry is
 * (pay/x402-settle.ts); without one, the 402 that says what to sign.
 */
export const payX402: Handler<'pay_x402'> = async ({ services, headers }, input) => {
  const row = await findPayment(services.db(), input.payment_id);
  if (!row) throw notFound('payment');
  const view = await payViewFor(services, row);
  const signed = carriesX402Signature(headers)
    ? headers
    : input.payment_signature
      ? { 'payment-signature': input.payment_signature }
      : null;
  if (signed)
    return (await takeSignedPayment(services, row, view, signed)) as Reply<PayInstructions>;
  if (view.status !== 'requested') {
    throw new ServiceError(
      'payment_not_payable',
      `This payment is ${view.status}: there is nothing to pay.`,
      { status: view.status },
    );
  }
  return requirementsReply(services, view);
};

/** `402` with the payment's x402 v2 requirements, in the body and in `PAYMENT-REQUIRED`. */
async function requirementsReply(
  services: Services,
  view: PayView,
): Promise<Reply<PayInstructions>> {
  const required = x402Requirements(view, new Date(services.clock.now()), {
    domain: await tokenDomain(services.chain, view.chain_id, view.token_address),
  });
  // The 402's body is the binding's declared PaymentRequired, not the operation's output.
  return reply(402, required, {
    ...NOT_KEPT,
    [PAYMENT_REQUIRED_HEADER]: paymentRequiredHeader(required),
  }) as unknown as Reply<PayInstructions>;
}

/**
 * The PayView of a payment with what lets its payer check it before paying: the factory and
 * salt of its deposit address (the factory only when it does make that address: a service
 * whose FORWARDER_FACTORY_ADDRESS changed since the request names none rather than a wrong
 * one), the transaction already reported, and the public RPC the operator suggests.
 */
export async function payViewFor(services: Services, row: PaymentRow): Promise<PayView> {
  const view = await payViewOf(services, row);
  const factory = services.chain?.factory ?? null;
  const deposit = row.depositAddress;
  const madeBy =
    deposit !== null &&
    factory !== null &&
    depositAddress({
      factory,
      token: row.tokenAddress as `0x${string}`,
      payee: row.payeeAddress as `0x${string}`,
      paymentId: row.paymentId,
    }).toLowerCase() === deposit.toLowerCase();
  return {
    ...view,
    forwarder_factory: madeBy ? factory : null,
    deposit_salt: deposit === null ? null : depositSalt(row.paymentId),
    reported_tx_hash: row.reportedTxHash,
    rpc_url: services.chain?.publicRpcUrl ?? null,
  };
}
