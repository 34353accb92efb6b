import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { PAY_PAGE_CSP } from '../../actors/payments/pay/page.ts';
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import { callTool, connectMcp } from '../helpers/clients.ts';
import {
  agreedPair,
  chainConfig,
  requestPayment,
  setPayout,
  type PaymentBody,
} from '../helpers/payments-core.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * `pay` (GET /pay/<payment_id>, no token) through the real doors: the JSON instructions by
 * default and always over MCP, the pay page for a browser with its security headers, 402 with
 * x402 v2 requirements for an x402 client while the payment is requested, the refusals, and the
 * pay script served byte for byte at /pay/service_pay.py.
 */
const test = suite<{ chain: TestChain; server: TestServer; payment: PaymentBody; mcp: Client }>(
  'pay: JSON instructions, the page, x402, and the pay script',
);

/** What Chromium sends for a page it navigates to. */
const BROWSER_ACCEPT =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8';

const SCRIPT = readFileSync(new URL('../../protocol/documents/service_pay.py', import.meta.url));

test.before(async (context) => {
  context.chain = await startAnvil();
  context.server = await startTestServer(chainConfig(context.chain));
  context.payment = await newPayment(context.server, context.chain, '12.50');
  context.mcp = await connectMcp(context.server, undefined, 'pay-test');
});
test.after(async ({ server, mcp }) => {
  await mcp.close();
  await server.close();
});

/** A requested payment of a fresh agreed deal, its payee paid at dev account 4. */
async function newPayment(server: TestServer, chain: TestChain, amount: string) {
  const { payee, payer, dealId } = await agreedPair(server);
  assert.is((await setPayout(server, payee, chain.accounts[4]!)).status, 200);
  const asked = await requestPayment(server, payee, {
    deal_id: dealId,
    payer_agent_id: payer.agent_id,
    amount_usdc: amount,
    memo: `memo ${randomUUID()}`,
  });
  assert.is(asked.status, 201, JSON.stringify(asked.body));
  return asked.body;
}

const get = (server: TestServer, path: string, headers: Record<string, string> = {}) =>
  fetch(server.url(path), { headers });

test('pay answers the JSON instructions to a caller that states no preference, */*, or JSON, never kept in a cache', async ({
  server,
  payment,
}) => {
  for (const accept of [
    undefined,
    '*/*',
    'application/json',
    'text/html;q=0.5, application/json',
  ]) {
    const response = await get(
      server,
      `/pay/${payment.payment_id}`,
      accept === undefined ? {} : { accept },
    );
    assert.is(response.status, 200, String(accept));
    assert.is(response.headers.get('content-type'), 'application/json', String(accept));
    assert.is(response.headers.get('vary')?.toLowerCase(), 'accept');
    assert.is(response.headers.get('cache-control'), 'no-store');
    assert.is(response.headers.get('x-content-type-options'), 'nosniff');
    assert.is(response.headers.get('content-security-policy'), null);
    const body = (await response.json()) as Record<string, unknown>;
    assert.equal(
      [body.payment_id, body.status, body.pay_to, body.amount_units, body.amount_usdc],
      [payment.payment_id, 'requested', payment.pay_to, '12500000', '12.50'],
    );
  }
});

test('pay answers a browser the pay page, with its CSP, no-store, Vary: Accept, nosniff and no referrer', async ({
  server,
  payment,
}) => {
  const response = await get(server, `/pay/${payment.payment_id}`, { accept: BROWSER_ACCEPT });
  assert.is(response.status, 200);
  assert.is(response.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.is(response.headers.get('content-security-policy'), PAY_PAGE_CSP);
  assert.is(response.headers.get('cache-control'), 'no-store');
  assert.is(response.headers.get('vary')?.toLowerCase(), 'accept');
  assert.is(response.headers.get('x-content-type-options'), 'nosniff');
  assert.is(response.headers.get('referrer-policy'), 'no-referrer');
  const page = await response.text();
  assert.match(page, /^<!doctype html>/i);
  assert.ok(page.includes('12.50'), 'the page shows the amount');
  assert.ok(page.includes(payment.pay_to), 'the page shows where to pay');
});

test('pay answers an x402 client 402 with x402 v2 requirements, in the body and base64 in PAYMENT-REQUIRED', async ({
  server,
  payment,
  chain,
}) => {
  const response = await get(server, `/pay/${payment.payment_id}?x402=1`);
  assert.is(response.status, 402);
  assert.is(response.headers.get('cache-control'), 'no-store');
  const header = response.headers.get('payment-required');
  assert.ok(header, 'PAYMENT-REQUIRED is sent');
  const decoded = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as {
    x402Version: number;
    error: string;
    accepts: Record<string, unknown>[];
  };
  assert.equal(await response.json(), decoded, 'the body is the header, decoded');
  assert.is(decoded.x402Version, 2);
  assert.equal(
    {
      scheme: decoded.accepts[0]?.scheme,
      network: decoded.accepts[0]?.network,
      amount: decoded.accepts[0]?.amount,
      asset: decoded.accepts[0]?.asset,
      payTo: decoded.accepts[0]?.payTo,
    },
    {
      scheme: 'exact',
      network: 'eip155:8453',
      amount: '12500000',
      asset: chain.usdc,
      payTo: payment.pay_to,
    },
  );

  // A retry that signed a payment is told the signature was neither used nor kept.
  const signed = await get(server, `/pay/${payment.payment_id}`, {
    'payment-signature': Buffer.from('{"x402Version":2}').toString('base64'),
  });
  assert.is(signed.status, 402);
  assert.match(((await signed.json()) as { error: string }).error, /neither used nor kept/);
});

test('pay over MCP answers the JSON instructions, whatever is asked', async ({ mcp, payment }) => {
  const result = await callTool(mcp, 'pay', { payment_id: payment.payment_id });
  assert.not.ok(result.isError, JSON.stringify(result));
  assert.is(result.structuredContent?.payment_id, payment.payment_id);
  assert.is(result.structuredContent?.pay_to, payment.pay_to);
  assert.equal(JSON.parse(result.content[0]!.text), result.structuredContent);
  // x402 is HTTP's: over MCP the 402 is an error result carrying the same requirements.
  const x402 = await callTool(mcp, 'pay', { payment_id: payment.payment_id, x402: '1' });
  assert.ok(x402.isError);
  assert.is((JSON.parse(x402.content[0]!.text) as { x402Version: number }).x402Version, 2);
});

test('a payment no longer requested gets no 402: its instructions say not to pay again', async ({
  server,
  chain,
}) => {
  const payment = await newPayment(server, chain, '1.00');
  await chain.mint(chain.accounts[6]!.address, 1_000_000n);
  const sent = await chain.transfer(
    chain.accounts[6]!,
    payment.pay_to as `0x${string}`,
    1_000_000n,
  );
  const reported = await fetch(server.url(`/pay/${payment.payment_id}/tx`), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tx_hash: sent.hash }),
  });
  assert.is(reported.status, 200, await reported.clone().text());
  assert.is(((await reported.json()) as { status: string }).status, 'seen');
  const response = await get(server, `/pay/${payment.payment_id}?x402=1`);
  assert.is(response.status, 200);
  assert.is(response.headers.get('payment-required'), null);
  const body = (await response.json()) as { status: string; steps: string[] };
  assert.is(body.status, 'seen');
  assert.match(body.steps[0]!, /Do not pay again/);
});

test('pay refuses an unknown payment with 404 problem+json in every representation, and a malformed id or query with invalid_input', async ({
  server,
}) => {
  for (const headers of [{}, { accept: BROWSER_ACCEPT }] as Record<string, string>[]) {
    for (const query of ['', '?x402=1']) {
      const response = await get(server, `/pay/${randomUUID()}${query}`, headers);
      assert.is(response.status, 404);
      assert.is(response.headers.get('content-type'), 'application/problem+json');
      assert.is(((await response.json()) as { code: string }).code, 'not_found');
    }
  }
  for (const path of ['/pay/not-a-uuid', `/pay/${randomUUID()}?x402=yes`]) {
    const response = await get(server, path);
    assert.is(response.status, 400, path);
    assert.is(((await response.json()) as { code: string }).code, 'invalid_input', path);
  }
  const unknown = await get(server, `/pay/${randomUUID()}?format=html`);
  assert.is(((await unknown.json()) as { code: string }).code, 'unknown_field');
});

test('/pay/service_pay.py serves the committed pay script byte for byte, without a token, and is described in /openapi.json', async ({
  server,
  mcp,
}) => {
  const response = await get(server, '/pay/service_pay.py');
  assert.is(response.status, 200);
  assert.is(response.headers.get('content-type'), 'text/x-python; charset=utf-8');
  const bytes = Buffer.from(await response.arrayBuffer());
  assert.ok(bytes.equals(SCRIPT), 'the served bytes are the file');
  assert.ok(bytes.includes('{'), 'its braces were left as they are');

  const openApi = (await (await get(server, '/openapi.json')).json()) as {
    paths: Record<string, Record<string, { responses: Record<string, Record<string, unknown>> }>>;
  };
  assert.ok(openApi.paths['/pay/service_pay.py']?.get, 'the script is in /openapi.json');
  const pay = openApi.paths['/pay/{payment_id}']?.get;
  assert.ok(pay?.responses['402'], 'pay declares its 402');
  assert.ok(
    (pay?.responses['402']?.headers as Record<string, unknown>)['payment-required'],
    'with PAYMENT-REQUIRED',
  );
  assert.ok(
    (pay?.responses['200']?.content as Record<string, unknown>)['text/html'],
    'pay answers text/html too',
  );
  const { resources } = await mcp.listResources();
  assert.not.ok(
    resources.some((resource) => resource.uri.endsWith('/pay/service_pay.py')),
    'a program to run is no resource to read',
  );
});

test.run();
