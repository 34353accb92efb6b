import { html, reply, type Reply } from '../../protocol/binding.ts';
import { findPayment } from '../../storage/payments.ts';
import type { Handler } from '../kernel/handler.ts';
import { notFound } from '../kernel/principal.ts';
import { payInstructions, type PayInstructions } from './pay/instructions.ts';
import { payRepresentation } from './pay/negotiate.ts';
import { PAY_PAGE_CSP, payPageHtml } from './pay/page.ts';
import {
  carriesX402Signature,
  PAYMENT_REQUIRED_HEADER,
  paymentRequiredHeader,
  x402Requirements,
} from './pay/x402.ts';
import { payViewOf } from './payment-view.ts';

/**
 * `pay` (GET /pay/<payment_id>, no token): one payment in the form its caller takes
 * (protocol/pay-binding.ts). The JSON instructions for agents (and always over MCP, which hands
 * no headers); the page for a browser; 402 with x402 requirements for an x402 client, only while
 * the payment is `requested` (past that there is nothing to pay, and a 402 would say otherwise).
 * Nothing of it is cached: the status moves.
 */
export const pay: Handler<'pay'> = async ({ services, headers }, input) => {
  const row = await findPayment(services.db(), input.payment_id);
  if (!row) throw notFound('payment');
  const view = await payViewOf(services, row);
  const representation = payRepresentation(headers, { x402: input.x402 });
  if (representation === 'x402' && view.status === 'requested') {
    const required = x402Requirements(view, new Date(services.clock.now()), {
      signatureIgnored: carriesX402Signature(headers),
    });
    // The 402's body is the binding's declared PaymentRequired, not the operation's output.
    return reply(402, required, {
      ...NOT_KEPT,
      [PAYMENT_REQUIRED_HEADER]: paymentRequiredHeader(required),
    }) as unknown as Reply<PayInstructions>;
  }
  if (representation === 'html') {
    return reply(200, html(await payPageHtml(view)), {
      ...NOT_KEPT,
      'content-security-policy': PAY_PAGE_CSP,
      'referrer-policy': 'no-referrer',
    });
  }
  return reply(200, payInstructions(view), NOT_KEPT);
};

const NOT_KEPT = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };
