import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { erc20Abi, type Address, type Hash, type Hex } from 'viem';
import type { HDAccount } from 'viem/accounts';
import { privateKeyOf, startAnvil, type TestChain } from '../helpers/chain.ts';
import { callTool, connectMcp } from '../helpers/clients.ts';
import { deliver, rate, reputationOf } from '../helpers/deals.ts';
import { callJson } from '../helpers/http.ts';
import { injectWallet, WalletError, type WalletRequest } from '../helpers/injected-wallet.ts';
import {
  agreedPair,
  chainConfig,
  getPayment,
  readLog,
  requestedPayment,
  setPayout,
  type PaymentBody,
} from '../helpers/payments-core.ts';
import { runPython, type PythonRun } from '../helpers/python.ts';
import { clientSuite, type ExternalClient } from '../helpers/real-clients.ts';
import { onTestsEnd } from '../helpers/resources.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { submitAuthorization, type ShownAuthorization } from '../helpers/x402.ts';

/**
 * A deal paid end to end on a real local chain (anvil) by the real service, in each of the ways
 * /pay/protocol describes: an agent that runs code (the pay script, run by python3), one that
 * can only call tools (`pay` over MCP, then report_payment_tx), a person with a wallet app (the
 * pay page in headless Chromium with a test wallet that sends to anvil), and a transfer to the
 * deposit address from any account, found by the watcher alone and swept to the payee.
 */

const PYTHON: ExternalClient = {
  name: 'Python 3.9+',
  probe: ['/usr/bin/python3', '-c', 'import sys; assert sys.version_info >= (3, 9)'],
  debian: 'python3',
};

const CHROMIUM: ExternalClient = {
  name: 'Chromium',
  probe: ['chromium', '--version'],
  debian: 'chromium',
};

/** Micro-USDC each payer is given: more than any payment here. */
const FUNDS = 100_000_000n;
/** Anvil calls a block finalized 64 below its head: mined at once to let a payment turn final. */
const PAST_FINALITY = 70;

interface World {
  chain: TestChain;
  server: TestServer;
}

let world: Promise<World> | undefined;

/**
 * One chain and one service for every suite of this file, started on first use and ended with
 * the run. The service is configured with the chain as an operator would (CHAIN_RPC_URLS,
 * USDC_ADDRESS, FORWARDER_FACTORY_ADDRESS, CONFIRMATIONS 2, CHAIN_POLL_MS 50).
 */
function theWorld(): Promise<World> {
  world ??= (async () => {
    const chain = await startAnvil();
    const server = await startTestServer(chainConfig(chain));
    // The service's own watcher loop (started by the payments capability) does the finding.
    onTestsEnd(() => server.close());
    return { chain, server };
  })();
  return world;
}

interface Deal {
  payee: Agent;
  payer: Agent;
  dealId: string;
  workspaceId: string;
  payeeAccount: HDAccount;
  payerAccount: HDAccount;
  payment: PaymentBody;
}

/**
 * Two agents agree a deal; both prove their payout addresses (the payer's is where its USDC
 * comes from, funded here), and the payee requests `amount`.
 */
async function requestedDeal(
  { server, chain }: World,
  accounts: { payee: number; payer: number },
  amount: string,
): Promise<Deal> {
  const { payee, payer, dealId, workspaceId } = await agreedPair(server);
  const payeeAccount = chain.accounts[accounts.payee]!;
  const payerAccount = chain.accounts[accounts.payer]!;
  assert.is((await setPayout(server, payee, payeeAccount)).status, 200);
  assert.is((await setPayout(server, payer, payerAccount)).status, 200);
  await chain.mint(payerAccount.address, FUNDS);
  const payment = await requestedPayment(
    server,
    { payee, payer, dealId },
    amount,
    `e2e ${randomUUID()}`,
  );
  return { payee, payer, dealId, workspaceId, payeeAccount, payerAccount, payment };
}

const ORDER = ['requested', 'seen', 'confirmed', 'final'];

/**
 * Mines what the payment needs to reach `target`, as the chain would go on by itself: one block
 * while it is seen (CONFIRMATIONS counts the crediting block too), blocks past anvil's finality
 * once it is confirmed, nothing while it is requested (the transfer is the payer's move). Between
 * moves it waits for the watcher's next change to the payee (the long-poll answers at once when
 * one is already there).
 */
async function driveTo(
  { server, chain }: World,
  deal: Deal,
  target: 'confirmed' | 'final',
): Promise<PaymentBody> {
  for (let round = 0; round < 60; round++) {
    const shown = await getPayment(server, deal.payee, deal.payment.payment_id);
    assert.is(shown.status, 200, JSON.stringify(shown.body));
    if (shown.body.status === 'expired') assert.unreachable('the payment expired');
    if (ORDER.indexOf(shown.body.status) >= ORDER.indexOf(target)) return shown.body;
    if (shown.body.status === 'seen') await chain.mine(1);
    if (shown.body.status === 'confirmed') await chain.mine(PAST_FINALITY);
    await callJson(server, 'GET', '/changes/wait?timeout=5', deal.payee.api_token);
  }
  throw new Error(`payment ${deal.payment.payment_id} did not reach ${target}`);
}

/** The on-chain evidence of a payment credited by `hash`, as GET /payments/<id> shows it. */
function assertCreditedBy(payment: PaymentBody, hash: string, to: string) {
  const evidence = payment.evidence as Record<string, unknown> | null;
  assert.is(payment.tx_hash, hash);
  assert.ok(evidence, 'the evidence is shown');
  assert.is(evidence.tx_hash, hash);
  assert.is(String(evidence.to).toLowerCase(), to.toLowerCase());
  assert.is(evidence.amount_usdc, payment.amount_usdc);
  assert.type(evidence.block_number, 'number');
  assert.type(evidence.log_index, 'number');
  assert.ok((payment.confirmations as number) >= 2, 'CONFIRMATIONS reached');
}

/** The USDC transfer `pay` asked for, sent from `from`'s wallet; its hash once mined. */
async function sendAsInstructed(
  chain: TestChain,
  from: HDAccount,
  instructions: Record<string, unknown>,
): Promise<Hash> {
  const hash = await chain.wallet(from).writeContract({
    address: instructions.token_address as Address,
    abi: erc20Abi,
    functionName: 'transfer',
    args: [instructions.pay_to as Address, BigInt(instructions.amount_units as string)],
  });
  const receipt = await chain.publicClient.waitForTransactionReceipt({ hash });
  assert.is(receipt.status, 'success');
  return hash;
}

// ---------------------------------------------------------------------------------------------

const code = clientSuite<Record<string, never>>(
  'paid end to end by an agent that runs code: the pay script under python3',
  PYTHON,
);

code(
  'the payer downloads service_pay.py and runs it with its key in the environment: sent, reported, confirmed, then final; the log and the reputation show it and the rating becomes payment-backed',
  async () => {
    const w = await theWorld();
    const { server, chain } = w;
    const deal = await requestedDeal(w, { payee: 1, payer: 5 }, '12.50');
    // The payee delivered and the payer rated before paying: the rating is not payment-backed yet.
    assert.is((await deliver(server, deal.payee, deal.dealId, ['deal.md'])).status, 201);
    const rated = await rate(server, deal.payer, deal.dealId, deal.payee, { score: 5 });
    assert.is(rated.status, 201, JSON.stringify(rated.body));
    assert.is(rated.body.payment_backed, false);

    const script = await fetch(server.url('/pay/service_pay.py'));
    assert.is(script.status, 200);
    const dir = mkdtempSync(join(tmpdir(), 'pay-script-'));
    onTestsEnd(async () => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'service_pay.py');
    writeFileSync(path, Buffer.from(await script.arrayBuffer()));
    const payerBefore = await chain.balanceOf(deal.payerAccount.address);

    const running = runPython(
      [
        path,
        deal.payment.pay_url,
        '--rpc',
        chain.url,
        '--token',
        deal.payer.api_token,
        '--yes',
        '--wait',
        '60',
        '--poll',
        '0.2',
      ],
      { SERVICE_PAY_PRIVATE_KEY: privateKeyOf(deal.payerAccount) },
    );
    // The chain goes on while the script waits for its confirmation.
    let done: PythonRun | undefined;
    void running.then((run) => (done = run));
    for (let round = 0; round < 60 && done === undefined; round++) {
      const shown = await getPayment(server, deal.payee, deal.payment.payment_id);
      if (shown.body.status === 'seen') await chain.mine(1);
      if (done === undefined) {
        await Promise.race([
          running,
          callJson(server, 'GET', '/changes/wait?timeout=5', deal.payee.api_token),
        ]);
      }
    }
    const run = await running;
    assert.is(run.code, 0, `exit ${run.code}\n${run.stdout}\n${run.stderr}`);
    const sent = /transaction (0x[0-9a-f]{64})/.exec(run.stdout)?.[1];
    assert.ok(sent, `the script printed its transaction:\n${run.stdout}`);
    assert.match(run.stdout, /status: (confirmed|final)/);
    assert.is(
      await chain.balanceOf(deal.payerAccount.address),
      payerBefore - 12_500_000n,
      'exactly the amount left the payer',
    );

    const final = await driveTo(w, deal, 'final');
    assertCreditedBy(final, sent, deal.payment.pay_to);
    assert.equal(
      final.history.map((move) => move.status),
      ['requested', 'seen', 'confirmed', 'final'],
    );
    // The payer sees the same payment and evidence.
    const byPayer = await getPayment(server, deal.payer, deal.payment.payment_id);
    assert.equal(byPayer.body.evidence, final.evidence);

    const log = await readLog(server, deal.payer, deal.workspaceId);
    assert.is(log.status, 200);
    assert.equal(
      log.body.lines
        .filter((line) => line.payment_id === deal.payment.payment_id)
        .map((line) => line.kind)
        .reverse(),
      ['payment.requested', 'payment.seen', 'payment.confirmed', 'payment.final'],
    );

    const payee = await reputationOf(server, deal.payee);
    const payer = await reputationOf(server, deal.payer);
    assert.is(payee.counts.payments_received, 1);
    assert.is(payee.counts.payments_made, 0);
    assert.is(payer.counts.payments_made, 1);
    assert.is(payer.counts.payments_received, 0);
    assert.is(payee.counts.payment_backed_ratings, 1);
    assert.equal(
      payee.ratings.map((rating) => [rating.rating_id, rating.payment_backed]),
      [[rated.body.rating_id, true]],
    );
    // Counted once: nothing more mined or read changes it.
    await chain.mine(3);
    assert.is((await reputationOf(server, deal.payee)).counts.payments_received, 1);
  },
);

// ---------------------------------------------------------------------------------------------

const tools = suite<Record<string, never>>(
  'paid end to end by an agent that can only call tools: pay over MCP, report_payment_tx',
);

tools(
  'over MCP, pay answers what to send; the transfer sent as told and reported with report_payment_tx is confirmed',
  async () => {
    const w = await theWorld();
    const { server, chain } = w;
    const deal = await requestedDeal(w, { payee: 2, payer: 6 }, '3.000001');
    const mcp = await connectMcp(server, deal.payer.api_token, 'tools-only-payer');
    try {
      const told = await callTool(mcp, 'pay', { payment_id: deal.payment.payment_id });
      assert.not.ok(told.isError, JSON.stringify(told));
      const instructions = told.structuredContent!;
      assert.equal(
        [instructions.amount_units, instructions.token_address, instructions.chain_id],
        ['3000001', chain.usdc, chain.chainId],
      );
      const hash = await sendAsInstructed(chain, deal.payerAccount, instructions);
      const reported = await callTool(mcp, 'report_payment_tx', {
        payment_id: deal.payment.payment_id,
        tx_hash: hash,
      });
      assert.not.ok(reported.isError, JSON.stringify(reported));
      assert.is(reported.structuredContent?.status, 'seen');
      const confirmed = await driveTo(w, deal, 'confirmed');
      assertCreditedBy(confirmed, hash, instructions.pay_to as string);
      const shown = await callTool(mcp, 'get_payment', { payment_id: deal.payment.payment_id });
      assert.ok(['confirmed', 'final'].includes(shown.structuredContent?.status as string));
    } finally {
      await mcp.close();
    }
  },
);

// ---------------------------------------------------------------------------------------------

const person = clientSuite<{ browser: Browser }>(
  'paid end to end by a person with a wallet app: the pay page in headless Chromium',
  CHROMIUM,
);

person.before(async (context) => {
  context.browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox'],
  });
});
person.after(async ({ browser }) => {
  await browser.close();
});

person(
  'the page opened from pay_url, paid with the browser wallet (a test wallet that sends to anvil), shows the payment confirmed',
  async ({ browser }) => {
    const w = await theWorld();
    const { chain } = w;
    const deal = await requestedDeal(w, { payee: 3, payer: 7 }, '7.25');
    const page = await browser.newPage();
    const asked: string[] = [];
    let sent: Hash | undefined;
    // The wallet app: its account is the payer's; it signs what the page asks and sends it to anvil.
    await injectWallet(page, async (request: WalletRequest) => {
      asked.push(request.method);
      switch (request.method) {
        case 'eth_requestAccounts':
        case 'eth_accounts':
          return [deal.payerAccount.address];
        case 'eth_sendTransaction': {
          const [tx] = request.params as [{ to: Address; data: Hex; value?: Hex }];
          sent = await chain.wallet(deal.payerAccount).sendTransaction({
            to: tx.to,
            data: tx.data,
            value: BigInt(tx.value ?? 0),
          });
          await chain.publicClient.waitForTransactionReceipt({ hash: sent });
          return sent;
        }
        default:
          return chain.publicClient.request({
            method: request.method as 'eth_chainId',
            params: request.params as never,
          });
      }
    });
    try {
      const opened = await page.goto(deal.payment.pay_url);
      assert.is(opened?.status(), 200);
      assert.match(opened?.headers()['content-type'] ?? '', /^text\/html/);
      assert.is(await page.locator('#pay-to').textContent(), deal.payment.pay_to);
      await page.click('#wallet-pay');
      await page.waitForSelector('#status[data-status="seen"], #status[data-status="confirmed"]');
      assert.ok(sent, 'the wallet sent the transfer');
      assert.ok((await page.locator('#tx').textContent())?.includes(sent));
      const confirmed = await driveTo(w, deal, 'confirmed');
      assertCreditedBy(confirmed, sent, deal.payment.pay_to);
      // The page polls the status and shows it.
      await page.waitForSelector('#status[data-status="confirmed"], #status[data-status="final"]', {
        timeout: 30_000,
      });
      assert.is(await page.locator('#wallet-pay').isDisabled(), true, 'no second payment');
      assert.ok(asked.includes('eth_sendTransaction'));
    } finally {
      await page.close();
    }
  },
);

person(
  'the page’s sign button has the wallet sign an x402 authorization (eth_signTypedData_v4, no gas); the service keeps it, the payee submits it, and the page shows the payment seen',
  async ({ browser }) => {
    const w = await theWorld();
    const { chain, server } = w;
    const deal = await requestedDeal(w, { payee: 3, payer: 7 }, '2.75');
    const page = await browser.newPage();
    const asked: string[] = [];
    await injectWallet(page, async (request: WalletRequest) => {
      asked.push(request.method);
      switch (request.method) {
        case 'eth_requestAccounts':
        case 'eth_accounts':
          return [deal.payerAccount.address];
        case 'eth_signTypedData_v4': {
          const [, json] = request.params as [string, string];
          const typed = JSON.parse(json) as {
            types: Record<string, { name: string; type: string }[]>;
            domain: Record<string, unknown>;
            message: Record<string, string>;
          };
          const types = Object.fromEntries(
            Object.entries(typed.types).filter(([name]) => name !== 'EIP712Domain'),
          );
          return deal.payerAccount.signTypedData({
            domain: typed.domain as never,
            types,
            primaryType: 'TransferWithAuthorization',
            message: {
              ...typed.message,
              value: BigInt(typed.message.value!),
              validAfter: BigInt(typed.message.validAfter!),
              validBefore: BigInt(typed.message.validBefore!),
            },
          });
        }
        default:
          return chain.publicClient.request({
            method: request.method as 'eth_chainId',
            params: request.params as never,
          });
      }
    });
    try {
      await page.goto(deal.payment.pay_url);
      await page.click('#wallet-sign');
      await page.waitForFunction(() =>
        (document.getElementById('tx')?.textContent ?? '').includes('the payee submits it'),
      );
      assert.not.ok(asked.includes('eth_sendTransaction'), 'no transaction: only a signature');
      assert.is(await page.locator('#wallet-pay').isDisabled(), true, 'no second payment');
      const kept = (await getPayment(server, deal.payee, deal.payment.payment_id))
        .body as unknown as { authorization: ShownAuthorization };
      assert.is(kept.authorization.from.toLowerCase(), deal.payerAccount.address.toLowerCase());
      // The payee submits it, paying the gas.
      await submitAuthorization(chain, deal.payeeAccount, kept.authorization);
      await page.waitForSelector('#status[data-status="seen"], #status[data-status="confirmed"]', {
        timeout: 30_000,
      });
    } finally {
      await page.close();
    }
  },
);

person(
  'a wallet that cannot sign typed data is told to use the transfer button, and nothing is kept',
  async ({ browser }) => {
    const w = await theWorld();
    const { chain, server } = w;
    const deal = await requestedDeal(w, { payee: 3, payer: 7 }, '1.25');
    const page = await browser.newPage();
    await injectWallet(page, async (request: WalletRequest) => {
      if (request.method === 'eth_requestAccounts') return [deal.payerAccount.address];
      if (request.method === 'eth_signTypedData_v4') {
        throw new WalletError(4200, 'The requested method is not supported');
      }
      return chain.publicClient.request({
        method: request.method as 'eth_chainId',
        params: request.params as never,
      });
    });
    try {
      await page.goto(deal.payment.pay_url);
      await page.click('#wallet-sign');
      await page.waitForFunction(() =>
        (document.getElementById('wallet-note')?.textContent ?? '').includes(
          'cannot sign typed data',
        ),
      );
      assert.is(await page.locator('#wallet-pay').isDisabled(), false, 'the transfer button works');
      const shown = (await getPayment(server, deal.payee, deal.payment.payment_id))
        .body as unknown as {
        authorization: unknown;
      };
      assert.is(shown.authorization, null);
    } finally {
      await page.close();
    }
  },
);

// ---------------------------------------------------------------------------------------------

const deposit = suite<Record<string, never>>(
  'paid to the deposit address: found by the watcher alone, swept to the payee by anyone',
);

deposit(
  'a transfer to the deposit address from an account that is no party is found without a report, confirmed, and swept by another account to the payee',
  async () => {
    const w = await theWorld();
    const { server, chain } = w;
    const deal = await requestedDeal(w, { payee: 4, payer: 8 }, '5.00');
    const depositAddress = deal.payment.deposit_address as Address;
    assert.ok(
      depositAddress,
      'the service has a forwarder factory: the payment has a deposit address',
    );
    assert.is(deal.payment.pay_to, depositAddress);
    // An exchange, say: an account nobody registered.
    const exchange = chain.accounts[0]!;
    await chain.mint(exchange.address, 5_000_000n);
    const paid = await chain.transfer(exchange, depositAddress, 5_000_000n);

    const confirmed = await driveTo(w, deal, 'confirmed');
    assertCreditedBy(confirmed, paid.hash, depositAddress);
    assert.is(
      (confirmed.evidence as { from: string }).from.toLowerCase(),
      exchange.address.toLowerCase(),
    );
    const shown = await callJson<{ reported_tx_hash: string | null }>(
      server,
      'GET',
      `/payments/${deal.payment.payment_id}`,
      deal.payer.api_token,
    );
    assert.is(shown.body.reported_tx_hash, null, 'nobody reported it');

    const payeeBefore = await chain.balanceOf(deal.payeeAccount.address);
    assert.is(await chain.balanceOf(depositAddress), 5_000_000n);
    // Anyone may sweep: the chain helper's bystander (the last dev account), no party of the deal.
    await chain.sweep({
      token: chain.usdc,
      payee: deal.payeeAccount.address,
      paymentId: deal.payment.payment_id,
    });
    assert.is(await chain.balanceOf(depositAddress), 0n);
    assert.is(await chain.balanceOf(deal.payeeAccount.address), payeeBefore + 5_000_000n);
    // The sweep is no second payment: the payment stays credited by the one transfer.
    const final = await driveTo(w, deal, 'final');
    assert.is(final.tx_hash, paid.hash);
  },
);

code.run();
tools.run();
person.run();
deposit.run();
