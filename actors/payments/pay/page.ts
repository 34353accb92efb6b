/**
 * `pay` as a page, for the payer's person: one self-contained HTML document (inline CSS, one
 * inline script, the QR code as inline SVG rendered here; nothing loaded from elsewhere). Serve it
 * with `Content-Security-Policy: PAY_PAGE_CSP`, from the origin of `base_url` (the script talks to
 * `'self'` only). Everything agent-written (memo, deal title, names) is escaped and the memo is
 * shown in a block marked as the payee's words.
 */
import { createHash } from 'node:crypto';
import QRCode from 'qrcode';
import { eip681Link } from './eip681.ts';
import { PAY_PAGE_SCRIPT } from './page-script.ts';
import { chainName, payUrl, type PayStatus, type PayView } from './view.ts';
import { escapeHtml } from '../../kernel/escape-html.ts';

const PAY_PAGE_STYLE = `
:root { color-scheme: light dark; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
body { max-width: 40rem; margin: 1.5rem auto; padding: 0 1rem; line-height: 1.45; }
h1 { font-size: 1.4rem; margin-bottom: .25rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1rem; }
dt { font-weight: 600; }
dd { margin: 0; overflow-wrap: anywhere; }
code { font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
.agent-written { border-left: .3rem solid #b58900; padding: .2rem 1rem; margin: 1rem 0; background: rgba(181, 137, 0, .08); }
.agent-written h2 { font-size: 1rem; margin: .4rem 0; }
.agent-written blockquote { margin: .4rem 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.small { font-size: .9rem; opacity: .85; }
.final { border: 1px solid currentColor; padding: .5rem 1rem; border-radius: .4rem; }
.actions { display: flex; flex-wrap: wrap; gap: .75rem; margin: 1rem 0; }
.button { display: inline-block; padding: .6rem 1rem; border-radius: .4rem; border: 1px solid #1d4ed8; background: #1d4ed8; color: #fff; font: inherit; text-decoration: none; cursor: pointer; }
.button:disabled { opacity: .5; cursor: default; }
.qr { width: 14rem; max-width: 100%; background: #fff; padding: .5rem; }
.qr svg { display: block; width: 100%; height: auto; }
#status { font-weight: 600; }
`;

function sha256(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

/**
 * The page's Content-Security-Policy: nothing but its own inline script and style (by hash) and
 * fetches to its own origin (the report and the status poll). No eval, no other sources.
 */
export const PAY_PAGE_CSP = [
  "default-src 'none'",
  `script-src ${sha256(PAY_PAGE_SCRIPT)}`,
  `style-src ${sha256(PAY_PAGE_STYLE)}`,
  "connect-src 'self'",
  "img-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
].join('; ');

/** JSON safe inside a `<script type="application/json">` block: no `<`, `>`, `&` or line separators. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const STATUS_LABELS: Readonly<Record<PayStatus, string>> = {
  requested: 'requested: waiting for the transfer',
  seen: 'seen in a block: waiting for confirmations',
  confirmed: 'confirmed: becoming final',
  final: 'final: paid',
  expired: 'expired: do not pay; a transfer now is not credited',
};

/**
 * The page for `view`. `domain` is the token's EIP-712 domain (read from the chain, or a known
 * USDC deployment's): with it the page offers to pay by signing an x402 authorization; without
 * it, only by a transfer.
 */
export async function payPageHtml(
  view: PayView,
  domain: { name: string; version: string } | null = null,
): Promise<string> {
  const link = eip681Link(view);
  const qr = await QRCode.toString(link, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  const chain = `${chainName(view.chain_id)} (chain id ${view.chain_id})`;
  const e = escapeHtml;
  // A reported transaction is still being checked: paying again is the mistake to prevent.
  const payable = view.status === 'requested' && !view.reported_tx_hash;
  const data = {
    chain_id: view.chain_id,
    chain_name: chainName(view.chain_id),
    token_address: view.token_address,
    pay_to: view.pay_to,
    amount_units: view.amount_units.toString(),
    status: view.status,
    report_url: view.report_url,
    poll_url: payUrl(view),
    has_deposit_address: view.deposit_address !== null,
    x402: domain && {
      name: domain.name,
      version: domain.version,
      valid_before_max: Math.floor(Date.parse(view.expires_at) / 1000),
    },
  };
  const deposit = view.deposit_address
    ? `<h2>Or send from any wallet or exchange</h2>
<p>This payment has its own deposit address. Any wallet or exchange may send <strong>${e(view.amount_usdc)} USDC</strong> on <strong>${e(chain)}</strong> to it; USDC on another network, or another token, is not credited.</p>
<p><code id="deposit-address">${e(view.deposit_address)}</code></p>${
        view.forwarder_factory && view.deposit_salt
          ? `
<p class="small">Check it before paying: the factory <code id="forwarder-factory">${e(view.forwarder_factory)}</code> answers this address to <code>addressOf(token, payee, salt)</code> with the token and payee above and the salt <code id="deposit-salt">${e(view.deposit_salt)}</code>; whatever arrives there can only be swept to the payee.</p>`
          : ''
      }`
    : `<p class="small">Send from the payer's registered payout address: a transfer from another address to the payee is not credited.</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>Pay ${e(view.amount_usdc)} USDC to ${e(view.payee.name)}</title>
<style>${PAY_PAGE_STYLE}</style>
</head>
<body>
<h1>Pay ${e(view.amount_usdc)} USDC to ${e(view.payee.name)}</h1>
<p class="final">Payments are final. This service never holds money: the USDC goes from the payer to the payee on-chain, with no escrow and no refunds. Pay only what you agreed.</p>
<dl>
<dt>Amount</dt><dd><strong>${e(view.amount_usdc)} USDC</strong> (${e(view.amount_units.toString())} units, 6 decimals)</dd>
<dt>Token</dt><dd>USDC <code id="token-address">${e(view.token_address)}</code></dd>
<dt>Network</dt><dd>${e(chain)}</dd>
<dt>Payee</dt><dd>${e(view.payee.name)} <code id="payee-address">${e(view.payee_address)}</code></dd>
<dt>Payer</dt><dd>${e(view.payer.name)}</dd>
<dt>Deal</dt><dd id="deal-title">${e(view.deal.title)}</dd>
<dt>Status</dt><dd id="status" data-status="${e(view.status)}">${e(STATUS_LABELS[view.status])}</dd>
<dt>Expires</dt><dd><time datetime="${e(view.expires_at)}">${e(view.expires_at)}</time> (a transfer after this is not credited)</dd>
<dt>Payment</dt><dd><code>${e(view.payment_id)}</code></dd>
</dl>
<section class="agent-written" aria-labelledby="memo-heading">
<h2 id="memo-heading">Memo from the payee</h2>
<p class="small">Written by the payee's agent, ${e(view.payee.name)}: their words, not instructions from this service.</p>
<blockquote id="memo">${e(view.memo)}</blockquote>
</section>
<h2>Pay with a wallet app</h2>
<p>Scan the code, or open the link on a device with a wallet app. It asks for a transfer of ${e(view.amount_usdc)} USDC to <code id="pay-to">${e(view.pay_to)}</code>.</p>
<div class="qr" role="img" aria-label="QR code of the payment link">${qr}</div>
<div class="actions">
<a class="button" id="eip681" href="${e(link)}">Open in wallet app</a>
<button class="button" id="wallet-pay" type="button"${payable ? '' : ' disabled'}>Pay with browser wallet</button>${
    domain
      ? `
<button class="button" id="wallet-sign" type="button"${payable ? '' : ' disabled'}>Sign with browser wallet (x402, no gas)</button>`
      : ''
  }
</div>
<p id="wallet-note" class="small" aria-live="polite">${
    view.reported_tx_hash && view.status === 'requested'
      ? `A transaction was already reported for this payment and is being checked: <code id="reported-tx">${e(view.reported_tx_hash)}</code>. Do not pay again.`
      : ''
  }</p>
<p id="tx" class="small"></p>
${deposit}
<p class="small">Payment state and on-chain evidence (for the two parties): <code>${e(view.payment_url)}</code></p>
<script type="application/json" id="pay-data">${scriptJson(data)}</script>
<script>${PAY_PAGE_SCRIPT}</script>
</body>
</html>
`;
}
