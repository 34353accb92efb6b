/**
 * The pay page alone in headless Chromium: served with its CSP from a small node:http server
 * that stands in for the service's `GET /pay/<id>` (page and JSON status) and the public
 * `POST /pay/<id>/tx`, with a test wallet injected as `window.ethereum`.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import * as assert from 'uvu/assert';
import { decodeFunctionData, erc20Abi } from 'viem';
import { PAY_PAGE_CSP, payPageHtml } from '../../actors/payments/pay/page.ts';
import type { PayStatus, PayView } from '../../actors/payments/pay/view.ts';
import { injectWallet, recordingWallet, WalletError } from '../helpers/injected-wallet.ts';
import { HOSTILE_TEXT, samplePayView } from '../helpers/pay-view.ts';
import { clientSuite, type ExternalClient } from '../helpers/real-clients.ts';

const CHROMIUM: ExternalClient = {
  name: 'Chromium',
  probe: ['chromium', '--version'],
  debian: 'chromium',
};

const PAYER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const TX_HASH = `0x${'ab'.repeat(32)}`;

interface PayServer {
  url: string;
  view: PayView;
  /** Bodies POSTed to the report route. */
  reports: unknown[];
  /** What `GET /pay/<id>` (JSON) answers next: a status, or an HTTP error code. */
  answer: { status: PayStatus | 'nonsense' } | { httpStatus: number };
  close(): Promise<void>;
}

async function readBody(request: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of request) body += String(chunk);
  return body;
}

/** Serves the page for one payment, its JSON status and the report route. */
async function startPayServer(overrides: Partial<PayView> = {}): Promise<PayServer> {
  const state = { reports: [] as unknown[] } as PayServer;
  const server: Server = createServer((request, response) => {
    void (async () => {
      const path = new URL(request.url ?? '/', 'http://x').pathname;
      const page = `/pay/${state.view.payment_id}`;
      if (request.method === 'POST' && path === `${page}/tx`) {
        state.reports.push(JSON.parse(await readBody(request)));
        state.answer = { status: 'seen' };
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ payment_id: state.view.payment_id, status: 'seen' }));
      } else if (request.method === 'GET' && path === page) {
        if ((request.headers.accept ?? '').includes('text/html')) {
          response.writeHead(200, {
            'content-type': 'text/html; charset=utf-8',
            'content-security-policy': PAY_PAGE_CSP,
          });
          response.end(await payPageHtml(state.view));
        } else if ('httpStatus' in state.answer) {
          response.writeHead(state.answer.httpStatus, { 'content-type': 'application/json' });
          response.end('{}');
        } else {
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ status: state.answer.status }));
        }
      } else {
        response.writeHead(404).end();
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.url = '';
  state.view = samplePayView({
    base_url: base,
    report_url: `${base}/pay/${samplePayView().payment_id}/tx`,
    payment_url: `${base}/payments/${samplePayView().payment_id}`,
    ...overrides,
  });
  state.url = `${base}/pay/${state.view.payment_id}`;
  state.answer = { status: 'requested' };
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

/** Every CSP violation and console error the page reports, recorded from before its first script. */
async function watchViolations(page: Page): Promise<string[]> {
  const seen: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') seen.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => seen.push(`pageerror: ${error.message}`));
  await page.exposeFunction('__cspViolation', (text: string) => seen.push(`csp: ${text}`));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      const report = (window as unknown as { __cspViolation: (t: string) => void }).__cspViolation;
      report(`${event.violatedDirective} ${event.blockedURI}`);
    });
  });
  return seen;
}

const test = clientSuite<{ browser: Browser; server: PayServer; page: Page }>(
  'the pay page in headless Chromium',
  CHROMIUM,
);

test.before(async (context) => {
  context.browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox'],
  });
});

test.after(async (context) => {
  await context.browser.close();
});

test.after.each(async (context) => {
  await context.page.close();
  await context.server.close();
});

test('the wallet button sends transfer(pay_to, amount) to the token, reports the hash and shows the polled status', async (context) => {
  context.server = await startPayServer();
  context.page = await context.browser.newPage();
  const violations = await watchViolations(context.page);
  const wallet = recordingWallet({
    account: PAYER,
    chainId: 8453,
    txHash: TX_HASH,
    startChainId: 1,
  });
  await injectWallet(context.page, wallet.handle);
  await context.page.goto(context.server.url);
  await context.page.waitForSelector('#status[data-status="requested"]');
  await context.page.click('#wallet-pay');
  await context.page.waitForSelector('#status[data-status="seen"]');

  const methods = wallet.requests.map((request) => request.method);
  assert.equal(methods, [
    'eth_requestAccounts',
    'eth_chainId',
    'wallet_switchEthereumChain',
    'eth_chainId',
    'eth_sendTransaction',
  ]);
  assert.equal(wallet.requests[2]?.params, [{ chainId: '0x2105' }]);
  const [transaction] = (wallet.requests[4]?.params ?? []) as [
    { from: string; to: string; data: `0x${string}`; value: string },
  ];
  assert.is(transaction.from, PAYER);
  assert.is(transaction.to, context.server.view.token_address);
  assert.is(transaction.value, '0x0');
  const call = decodeFunctionData({ abi: erc20Abi, data: transaction.data });
  assert.is(call.functionName, 'transfer');
  assert.equal(call.args, [context.server.view.pay_to, 12_500_000n]);

  assert.equal(context.server.reports, [{ tx_hash: TX_HASH }]);
  assert.ok((await context.page.textContent('#tx'))?.includes(TX_HASH));
  assert.ok(await context.page.isDisabled('#wallet-pay'), 'no second payment once a hash exists');
  assert.equal(violations, []);
});

test('a payment to the payee’s own address encodes that address, and large amounts stay exact', async (context) => {
  context.server = await startPayServer({
    deposit_address: null,
    pay_to: samplePayView().payee_address,
    amount_units: 999_999_999_999_999_999n,
    amount_usdc: '999999999999.999999',
  });
  context.page = await context.browser.newPage();
  const wallet = recordingWallet({ account: PAYER, chainId: 8453, txHash: TX_HASH });
  await injectWallet(context.page, wallet.handle);
  await context.page.goto(context.server.url);
  await context.page.click('#wallet-pay');
  await context.page.waitForSelector('#status[data-status="seen"]');
  assert.not.ok(wallet.requests.some((request) => request.method === 'wallet_switchEthereumChain'));
  const send = wallet.requests.find((request) => request.method === 'eth_sendTransaction');
  const [transaction] = (send?.params ?? []) as [{ data: `0x${string}` }];
  const call = decodeFunctionData({ abi: erc20Abi, data: transaction.data });
  assert.equal(call.args, [samplePayView().payee_address, 999_999_999_999_999_999n]);
});

test('declining in the wallet sends and reports nothing, and the button works again', async (context) => {
  context.server = await startPayServer();
  context.page = await context.browser.newPage();
  await injectWallet(context.page, (request) => {
    if (request.method === 'eth_requestAccounts') throw new WalletError(4001, 'User rejected');
    throw new Error(`unexpected ${request.method}`);
  });
  await context.page.goto(context.server.url);
  await context.page.click('#wallet-pay');
  await context.page.waitForFunction(() =>
    document.getElementById('wallet-note')?.textContent?.includes('nothing was sent'),
  );
  assert.not.ok(await context.page.isDisabled('#wallet-pay'));
  assert.equal(context.server.reports, []);
});

test('a status the page cannot read shows as checking, never as failed', async (context) => {
  context.server = await startPayServer();
  context.server.answer = { httpStatus: 502 };
  context.page = await context.browser.newPage();
  await context.page.goto(context.server.url);
  await context.page.waitForSelector('#status[data-status="checking"]');
  assert.is(await context.page.textContent('#status'), 'checking');
  context.server.answer = { status: 'nonsense' };
  await context.page.reload();
  await context.page.waitForSelector('#status[data-status="checking"]');
  assert.not.match(String(await context.page.textContent('body')), /fail/i);
});

test('without a browser wallet the page points to the QR code, the link and the deposit address', async (context) => {
  context.server = await startPayServer();
  context.page = await context.browser.newPage();
  await context.page.goto(context.server.url);
  await context.page.click('#wallet-pay');
  await context.page.waitForFunction(() =>
    document.getElementById('wallet-note')?.textContent?.includes('No browser wallet found'),
  );
  assert.match(String(await context.page.textContent('#wallet-note')), /deposit address/);
});

test('hostile memo, title and names render as text and run nothing', async (context) => {
  context.server = await startPayServer({
    memo: HOSTILE_TEXT,
    deal: { deal_id: '33333333-3333-4333-8333-333333333333', title: HOSTILE_TEXT },
    payee: { agent_id: '11111111-1111-4111-8111-111111111111', name: HOSTILE_TEXT },
  });
  context.page = await context.browser.newPage();
  const violations = await watchViolations(context.page);
  await context.page.goto(context.server.url);
  await context.page.waitForSelector('#status[data-status="requested"]');
  assert.is(await context.page.textContent('#memo'), HOSTILE_TEXT);
  assert.is(await context.page.textContent('#deal-title'), HOSTILE_TEXT);
  assert.is(await context.page.evaluate(() => (window as { __pwned?: number }).__pwned), undefined);
  assert.is(await context.page.locator('img').count(), 0);
  assert.equal(violations, []);
});

test.run();
