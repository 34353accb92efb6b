import { z } from 'zod';
import type { Binding } from '../binding.ts';

/**
 * How `pay` (GET /pay/<payment_id>) travels over HTTP: JSON instructions, the pay page for a
 * browser, or `402 Payment Required` with x402 v2 requirements; which one is the handler's choice
 * (actors/payments/pay/negotiate.ts) from the headers declared here. Over MCP it answers JSON.
 */

/** x402 v2 `PaymentRequired` (actors/payments/pay/x402.ts), the body of the 402. */
export const paymentRequired = z
  .object({
    x402Version: z.literal(2),
    error: z.string().describe('Why payment is required and how this service takes it.'),
    resource: z.object({ url: z.string(), description: z.string(), mimeType: z.string() }),
    accepts: z.array(
      z.object({
        scheme: z.literal('exact'),
        network: z.string().describe('CAIP-2, e.g. `eip155:8453`.'),
        amount: z.string().describe('Atomic units (micro-USDC).'),
        asset: z.string().describe('The token contract.'),
        payTo: z.string(),
        maxTimeoutSeconds: z.number().int(),
        extra: z.looseObject({
          name: z
            .string()
            .optional()
            .describe("The token's EIP-712 domain name, as its contract states it."),
          version: z.string().optional().describe("The token's EIP-712 domain version."),
        }),
      }),
    ),
    extensions: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'X402PaymentRequired' });

/** What a signed x402 payment taken but not yet seen on-chain answers (202). */
export const x402Pending = z
  .looseObject({
    payment_id: z.uuid(),
    status: z.literal('requested'),
    amount_usdc: z.string(),
    settlement: z
      .enum(['facilitator', 'payee'])
      .describe(
        'Who submits the authorization: the facilitator the operator named, or the payee (`payment.authorized`).',
      ),
    settled_tx_hash: z
      .string()
      .nullable()
      .describe('The facilitator’s transaction, not yet seen paying the payment.'),
    settle_error: z.string().nullable().describe('Why the facilitator did not settle it.'),
  })
  .meta({ id: 'X402Pending' });

export const PAY_BINDING = {
  reply: { kind: 'json_or_html' },
  statuses: [
    {
      status: 402,
      description:
        'For x402 clients (`?x402=1`) while the payment is `requested`: x402 v2 payment requirements, in the body and base64 in `PAYMENT-REQUIRED`. A signed payment (`PAYMENT-SIGNATURE` or `X-PAYMENT`) that does not pay exactly this payment gets them again, `error` starting with the rule it broke (`wrong_recipient`, `wrong_amount`, `expired`, `invalid_signature`, `nonce_used`...), and nothing is kept.',
      schema: paymentRequired,
    },
    {
      status: 202,
      description:
        'A signed x402 payment was checked and kept, and the transfer is not seen on-chain yet: the facilitator is settling it, or (`settlement: payee`) the payee submits it. Ask again, or wait for `payment.seen`.',
      schema: x402Pending,
    },
  ],
  replyHeaders: {
    'payment-required': 'On a 402: the x402 v2 PaymentRequired object, base64 JSON.',
    'payment-response':
      'On a 200 to a signed payment: the x402 v2 SettlementResponse `{success, transaction, network, payer}`, base64 JSON, once the transfer is seen on-chain.',
    'content-security-policy':
      'On the page: its own inline script and style only, fetches to this origin only.',
    'cache-control': '`no-store`: the status changes; nothing here is kept.',
    'x-content-type-options': '`nosniff`.',
    'referrer-policy': '`no-referrer`: the payment id in the address goes nowhere else.',
  },
  requestHeaders: {
    accept:
      '`text/html` weighed above `application/json` (what browsers send) answers the pay page; anything else, JSON.',
    'payment-signature':
      'An x402 v2 signed payment (base64 PaymentPayload, scheme `exact`: an EIP-3009 authorization) for exactly this payment: 202 while its transfer is not seen, 200 with PAYMENT-RESPONSE once it is, 402 naming the rule it broke.',
    'x-payment': 'The x402 v1 form of the same.',
  },
} as const satisfies Binding;

/**
 * How `pay_x402` (POST /pay/<payment_id>) travels over HTTP: the signed payment in its header, as
 * x402 clients send it (or in the body's `payment_signature`, as MCP and mail must), and the same
 * 402, 202 and PAYMENT-RESPONSE as `pay`'s signed retry.
 */
export const PAY_X402_BINDING = {
  statuses: [
    {
      status: 402,
      description:
        'No signed payment yet (x402 v2 payment requirements, in the body and base64 in `PAYMENT-REQUIRED`), or one that does not pay exactly this payment: the requirements again, `error` starting with the rule it broke; nothing is kept.',
      schema: paymentRequired,
    },
    {
      status: 202,
      description:
        'The signed payment was checked and kept, and its transfer is not seen on-chain yet (the facilitator settles it, or the payee submits it). Ask again, or wait for `payment.seen`.',
      schema: x402Pending,
    },
  ],
  replyHeaders: {
    'payment-required': 'On a 402: the x402 v2 PaymentRequired object, base64 JSON.',
    'payment-response':
      'On a 200: the x402 v2 SettlementResponse `{success, transaction, network, payer}`, base64 JSON.',
    'cache-control': '`no-store`: the status changes; nothing here is kept.',
    'x-content-type-options': '`nosniff`.',
  },
  requestHeaders: {
    'payment-signature':
      'An x402 v2 signed payment (base64 PaymentPayload, scheme `exact`: an EIP-3009 authorization) for exactly this payment.',
    'x-payment': 'The x402 v1 form of the same.',
  },
} as const satisfies Binding;
