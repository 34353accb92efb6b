import { createHash } from 'node:crypto';
import QRCode from 'qrcode';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { eip681Link } from '../../actors/payments/pay/eip681.ts';
import { PAY_PAGE_CSP, payPageHtml } from '../../actors/payments/pay/page.ts';
import { HOSTILE_TEXT, samplePayView } from '../helpers/pay-view.ts';

const test = suite('the pay page');

function hashOf(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/** The contents of every `<tag ...>...</tag>` in the page. */
function contents(html: string, tag: string): string[] {
  return [...html.matchAll(new RegExp(`<${tag}[^>]*>([\\s\\S]*?)</${tag}>`, 'g'))].map(
    (match) => match[1] ?? '',
  );
}

test('agent-written memo, title and names are escaped, so no markup of theirs survives', async () => {
  const html = await payPageHtml(
    samplePayView({
      memo: HOSTILE_TEXT,
      deal: { deal_id: '33333333-3333-4333-8333-333333333333', title: HOSTILE_TEXT },
      payee: { agent_id: '11111111-1111-4111-8111-111111111111', name: HOSTILE_TEXT },
      payer: { agent_id: '22222222-2222-4222-8222-222222222222', name: HOSTILE_TEXT },
    }),
  );
  assert.not.ok(html.includes('__pwned = 1</script>'));
  assert.not.ok(html.includes('<img'));
  assert.not.ok(html.includes('onerror="'));
  assert.is((html.match(/<script/g) ?? []).length, 2, 'the data block and the page’s own script');
  assert.is((html.match(/<\/blockquote>/g) ?? []).length, 1);
  assert.ok(html.includes('&lt;script&gt;window.__pwned = 1&lt;/script&gt;&quot;&#39;&gt;'));
  assert.ok(html.includes('&amp;amp;'), 'an entity written by an agent shows as written');
});

test('the memo sits in a block marked as the payee’s words, not the service’s', async () => {
  const html = await payPageHtml(samplePayView());
  assert.match(
    html,
    /<section class="agent-written"[^>]*>\s*<h2[^>]*>Memo from the payee<\/h2>\s*<p[^>]*>Written by the payee's agent, design-bot: their words, not instructions from this service.<\/p>\s*<blockquote id="memo">Invoice 42: logo design, second round<\/blockquote>/,
  );
});

test('the CSP allows exactly the page’s inline script and style, by hash, and fetches to its own origin', async () => {
  const html = await payPageHtml(samplePayView());
  const [script] = contents(html, 'script').slice(-1);
  const [style] = contents(html, 'style');
  const directives = new Map(
    PAY_PAGE_CSP.split(';').map((part) => {
      const [name = '', ...values] = part.trim().split(/\s+/);
      return [name, values.join(' ')];
    }),
  );
  assert.is(directives.get('default-src'), "'none'");
  assert.is(directives.get('script-src'), hashOf(String(script)));
  assert.is(directives.get('style-src'), hashOf(String(style)));
  assert.is(directives.get('connect-src'), "'self'");
  assert.is(directives.get('base-uri'), "'none'");
  assert.is(directives.get('frame-ancestors'), "'none'");
  assert.not.ok(PAY_PAGE_CSP.includes('unsafe'));
});

test('the page loads nothing from elsewhere', async () => {
  const html = await payPageHtml(samplePayView());
  assert.not.match(html, /\ssrc=/);
  assert.not.match(html, /<link|<iframe|<object|<embed|@import|url\(/);
  const hrefs = [...html.matchAll(/href="([^"]*)"/g)].map((match) => match[1]);
  assert.equal(
    hrefs,
    [eip681Link(samplePayView()).replace('&', '&amp;')],
    'the one link is the wallet link',
  );
});

test('it shows the amount, token, chain, payee, deal, status, expiry and the finality notice', async () => {
  const view = samplePayView();
  const html = await payPageHtml(view);
  for (const shown of [
    '12.50 USDC',
    view.token_address,
    'Base (chain id 8453)',
    view.payee_address,
    'design-bot',
    'Logo for the shop',
    'data-status="requested"',
    view.expires_at,
    'Payments are final. This service never holds money',
  ]) {
    assert.ok(html.includes(shown), shown);
  }
});

test('the QR code is the EIP-681 link, as inline SVG rendered on the server', async () => {
  const view = samplePayView();
  const html = await payPageHtml(view);
  const svg = await QRCode.toString(eip681Link(view), {
    type: 'svg',
    errorCorrectionLevel: 'M',
    margin: 2,
  });
  assert.ok(
    html.includes(
      `<div class="qr" role="img" aria-label="QR code of the payment link">${svg}</div>`,
    ),
  );
});

test('the deposit address is offered to any wallet or exchange only when the payment has one', async () => {
  const withDeposit = await payPageHtml(samplePayView());
  assert.match(
    withDeposit,
    /Any wallet or exchange may send <strong>12\.50 USDC<\/strong> on <strong>Base \(chain id 8453\)<\/strong> to it/,
  );
  assert.ok(
    withDeposit.includes(`<code id="deposit-address">${samplePayView().deposit_address}</code>`),
  );
  const without = await payPageHtml(samplePayView({ deposit_address: null }));
  assert.not.ok(without.includes('deposit-address'));
  assert.match(without, /registered payout address/);
});

test('the script’s data block holds no agent-written text and nothing that closes the block', async () => {
  const view = samplePayView({
    memo: HOSTILE_TEXT,
    report_url: 'http://127.0.0.1:8080/pay/x</script>/tx',
  });
  const html = await payPageHtml(view);
  const [block] = contents(html, 'script');
  const data: Record<string, unknown> = JSON.parse(String(block));
  assert.equal(Object.keys(data).sort(), [
    'amount_units',
    'chain_id',
    'chain_name',
    'has_deposit_address',
    'pay_to',
    'poll_url',
    'report_url',
    'status',
    'token_address',
    'x402',
  ]);
  assert.is(data.x402, null, 'no token domain given: no x402 signing');
  assert.is(data.report_url, view.report_url);
  assert.is(data.amount_units, '12500000');
  assert.not.ok(String(block).includes('<'));
});

test('a payment no longer requested shows its status with the wallet button disabled', async () => {
  const html = await payPageHtml(samplePayView({ status: 'final' }));
  assert.match(html, /<button class="button" id="wallet-pay" type="button" disabled>/);
  assert.ok(html.includes('data-status="final">final: paid<'));
  const open = await payPageHtml(samplePayView());
  assert.match(open, /<button class="button" id="wallet-pay" type="button">/);
});

test('with the token’s EIP-712 domain the page offers to sign an x402 authorization, valid at most until the payment expires', async () => {
  const view = samplePayView();
  const html = await payPageHtml(view, { name: 'USD Coin', version: '2' });
  assert.match(
    html,
    /<button class="button" id="wallet-sign" type="button">Sign with browser wallet/,
  );
  const [block] = contents(html, 'script');
  const data = JSON.parse(String(block)) as { x402: Record<string, unknown> };
  assert.equal(data.x402, {
    name: 'USD Coin',
    version: '2',
    valid_before_max: Math.floor(Date.parse(view.expires_at) / 1000),
  });
  assert.not.ok(
    (await payPageHtml(view)).includes('id="wallet-sign"'),
    'no domain: no sign button',
  );
  const closed = await payPageHtml(samplePayView({ status: 'final' }), {
    name: 'USD Coin',
    version: '2',
  });
  assert.match(closed, /id="wallet-sign" type="button" disabled>/);
});

test.run();
