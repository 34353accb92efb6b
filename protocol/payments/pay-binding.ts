import { z } from 'zod';
import type { Binding } from '../binding.ts';

/**
 * How `pay` (GET /pay/<payment_id>) travels over HTTP: JSON instructions, the pay page for a
 * browser, or `402 Payment Required` with x402 v2 requirements; which one is the handler's choice
 * (actors/payments/pay/negotiate.ts) from the headers declared here. Over MCP it answers JSON.
 */

/** x402 v2 `PaymentRequired` (actors/payments/pay/x402.ts), the body of the 402. */
const paymentRequired = z
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

export const PAY_BINDING = {
  reply: { kind: 'json_or_html' },
  statuses: [
    {
      status: 402,
      description:
        'For x402 clients (`?x402=1`, or a retry carrying `PAYMENT-SIGNATURE` or `X-PAYMENT`) while the payment is `requested`: x402 v2 payment requirements, in the body and base64 in `PAYMENT-REQUIRED`. This service settles no signed authorization: send the transfer on-chain and report its hash.',
      schema: paymentRequired,
    },
  ],
  replyHeaders: {
    'payment-required': 'On a 402: the x402 v2 PaymentRequired object, base64 JSON.',
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
      'An x402 v2 signed payment: not used nor kept (this service settles none); answers 402 again.',
    'x-payment': 'The x402 v1 form of the same: answers 402 again.',
  },
} as const satisfies Binding;
