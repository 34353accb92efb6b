import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { payRepresentation } from '../../actors/payments/pay/negotiate.ts';
import {
  isX402Client,
  paymentRequiredHeader,
  x402Requirements,
} from '../../actors/payments/pay/x402.ts';
import { BASE_USDC, DEPOSIT_ADDRESS, HOSTILE_TEXT, samplePayView } from '../helpers/pay-view.ts';

const test = suite('pay for x402 clients');

const NOW = new Date('2026-12-01T12:00:00.000Z');

test('the requirements are an x402 v2 exact payment of the units to pay_to on the CAIP-2 network', () => {
  const required = x402Requirements(samplePayView(), NOW);
  assert.is(required.x402Version, 2);
  assert.is(required.accepts.length, 1);
  const [accept] = required.accepts;
  assert.is(accept?.scheme, 'exact');
  assert.is(accept?.network, 'eip155:8453');
  assert.is(accept?.amount, '12500000');
  assert.is(accept?.asset, BASE_USDC);
  assert.is(accept?.payTo, DEPOSIT_ADDRESS);
  assert.is(accept?.maxTimeoutSeconds, 24 * 3600, 'seconds left until the payment expires');
  assert.is(accept?.extra.name, 'USD Coin');
  assert.is(accept?.extra.version, '2');
  assert.is(
    required.resource.url,
    'http://127.0.0.1:8080/pay/7d4f2c1e-9a3b-4c5d-8e6f-0a1b2c3d4e5f',
  );
});

test('they say how to sign an authorization that moves the money straight to payTo, and how to transfer directly instead', () => {
  const view = samplePayView();
  const required = x402Requirements(view, NOW);
  for (const text of [required.error, required.resource.description]) {
    assert.match(text, /EIP-3009 transferWithAuthorization/);
    assert.match(text, /PAYMENT-SIGNATURE/);
    assert.match(text, /holds no key and no money/);
  }
  assert.is(required.accepts[0]?.extra.settlement, 'authorization-or-direct-transfer');
  assert.is(required.accepts[0]?.extra.report_url, view.report_url);
  const info = required.extensions['direct-transfer']?.info;
  assert.is(info?.report_url, view.report_url);
  assert.match(String(info?.how), /transfer\(payTo, amount\)/);
  assert.is(info?.deposit_address, DEPOSIT_ADDRESS);
  const refused = x402Requirements(view, NOW, {
    refusal: { rule: 'wrong_amount', message: 'The authorization moves 1 units.' },
  });
  assert.match(
    String(refused.error),
    /^wrong_amount: The authorization moves 1 units\. .*neither used nor kept/,
  );
});

test('a token without a known EIP-3009 domain gets no name or version rather than a wrong one', () => {
  const [accept] = x402Requirements(
    samplePayView({ chain_id: 31337, token_address: '0x5FbDB2315678afecb367f032d93F642f64180aa3' }),
    NOW,
  ).accepts;
  assert.is(accept?.network, 'eip155:31337');
  assert.is(accept?.extra.name, undefined);
  assert.is(accept?.extra.version, undefined);
});

test('a payment past its expiry leaves no time to pay', () => {
  const [accept] = x402Requirements(
    samplePayView({ expires_at: '2026-11-30T00:00:00.000Z' }),
    NOW,
  ).accepts;
  assert.is(accept?.maxTimeoutSeconds, 0);
});

test('the PAYMENT-REQUIRED header is the object as base64 JSON, and carries no agent-written text', () => {
  const view = samplePayView({ memo: HOSTILE_TEXT, deal: { deal_id: 'd', title: HOSTILE_TEXT } });
  const required = x402Requirements(view, NOW);
  const header = paymentRequiredHeader(required);
  assert.match(header, /^[A-Za-z0-9+/]+=*$/);
  const decoded: unknown = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
  assert.equal(decoded, required);
  assert.not.ok(JSON.stringify(decoded).includes('__pwned'));
});

test('an x402 client is one that asks with ?x402=1 or retries with a signed payment', () => {
  assert.ok(isX402Client({}, { x402: '1' }));
  assert.ok(isX402Client({ 'payment-signature': 'e30=' }));
  assert.ok(isX402Client({ 'x-payment': 'e30=' }));
  assert.not.ok(isX402Client({}));
  assert.not.ok(isX402Client({ accept: 'application/json' }, { x402: '0' }));
  assert.not.ok(isX402Client({ 'payment-signature': '' }));
});

test('pay answers browsers with the page, x402 clients with 402, and everyone else with JSON', () => {
  const browser = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
  assert.is(payRepresentation({ accept: browser }), 'html');
  assert.is(payRepresentation({ accept: browser }, { x402: '1' }), 'x402');
  assert.is(payRepresentation({ accept: browser, 'x-payment': 'e30=' }), 'x402');
  assert.is(payRepresentation({}), 'json');
  assert.is(payRepresentation({ accept: '*/*' }), 'json');
  assert.is(payRepresentation({ accept: 'application/json' }), 'json');
  assert.is(payRepresentation({ accept: 'text/html;q=0.5, application/json' }), 'json');
  assert.is(payRepresentation({ accept: 'text/*' }), 'html');
  assert.is(payRepresentation({ accept: 'text/html;q=nonsense, application/json;q=0.1' }), 'json');
});

test.run();
