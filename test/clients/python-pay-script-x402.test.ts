import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import type { Address } from 'viem';
import { privateKeyOf, startAnvil, type TestChain } from '../helpers/chain.ts';
import { callJson } from '../helpers/http.ts';
import {
  agreedPair,
  chainConfig,
  getPayment,
  requestPayment,
  setPayout,
} from '../helpers/payments-core.ts';
import { runPython, type PythonRun } from '../helpers/python.ts';
import { clientSuite, type ExternalClient } from '../helpers/real-clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { x402Fetch } from '../helpers/x402.ts';

/**
 * The pay script (served at /pay/service_pay.py) as the payee's: with no facilitator configured,
 * the payer's signed x402 payment is kept for the payee, and `--submit-authorization` submits it
 * with the payee's key paying the gas. The USDC moves from the payer to `pay_to`, and the
 * payment is credited and confirmed by the service as any transfer.
 */
const PYTHON: ExternalClient = {
  name: 'Python 3.9+',
  probe: ['/usr/bin/python3', '-c', 'import sys; assert sys.version_info >= (3, 9)'],
  debian: 'python3',
};

interface Context {
  chain: TestChain;
  server: TestServer;
  dir: string;
}
const test = clientSuite<Context>('the pay script submits a kept x402 authorization', PYTHON);

test.before(async (context) => {
  context.chain = await startAnvil();
  context.server = await startTestServer(chainConfig(context.chain));
  context.dir = mkdtempSync(join(tmpdir(), 'pay-script-x402-'));
});
test.after(async ({ chain, server, dir }) => {
  await server.close();
  await chain.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The script as the service serves it, written to `dir`. */
async function servedScript(server: TestServer, dir: string): Promise<string> {
  const path = join(dir, 'service_pay.py');
  writeFileSync(
    path,
    Buffer.from(await (await fetch(server.url('/pay/service_pay.py'))).arrayBuffer()),
  );
  return path;
}

test('--submit-authorization with the payee’s key and token moves the payer’s USDC to pay_to and waits until confirmed', async ({
  chain,
  server,
  dir,
}) => {
  const { payee, payer, dealId } = await agreedPair(server);
  const payeeAccount = chain.accounts[4]!;
  assert.is((await setPayout(server, payee, payeeAccount)).status, 200);
  const asked = await requestPayment(server, payee, {
    deal_id: dealId,
    payer_agent_id: payer.agent_id,
    amount_usdc: '3.00',
    memo: 'submitted by the payee',
  });
  assert.is(asked.status, 201, JSON.stringify(asked.body));
  const payment = asked.body;
  const wallet = chain.accounts[6]!;
  await chain.mint(wallet.address, 3_000_000n);
  const pay = x402Fetch(chain, wallet);
  assert.is((await pay(server.url(`/pay/${payment.payment_id}?x402=1`))).status, 202);

  const path = await servedScript(server, dir);
  const gasBefore = await chain.publicClient.getBalance({ address: payeeAccount.address });
  const running = runPython(
    [
      path,
      payment.pay_url,
      '--submit-authorization',
      '--rpc',
      chain.url,
      '--token',
      payee.api_token,
      '--yes',
      '--wait',
      '60',
      '--poll',
      '0.2',
    ],
    { SERVICE_PAY_PRIVATE_KEY: privateKeyOf(payeeAccount) },
  );
  // The chain goes on while the script waits for its confirmation.
  let done: PythonRun | undefined;
  void running.then((run) => (done = run));
  for (let round = 0; round < 60 && done === undefined; round++) {
    const shown = await getPayment(server, payee, payment.payment_id);
    if (shown.body.status === 'seen') await chain.mine(1);
    if (done === undefined) {
      await Promise.race([
        running,
        callJson(server, 'GET', '/changes/wait?timeout=5', payee.api_token),
      ]);
    }
  }
  const run = await running;
  assert.is(run.code, 0, `exit ${run.code}\n${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /submit the payer's signed authorization/);
  assert.match(run.stdout, /status: (confirmed|final)/);
  assert.is(await chain.balanceOf(wallet.address), 0n, 'the payer’s USDC moved');
  assert.is(await chain.balanceOf(payment.pay_to as Address), 3_000_000n);
  assert.ok(
    (await chain.publicClient.getBalance({ address: payeeAccount.address })) < gasBefore,
    'the payee’s key paid the gas',
  );
});

test('--submit-authorization for a payment that holds no signed payment sends nothing (exit 1)', async ({
  chain,
  server,
  dir,
}) => {
  const { payee, payer, dealId } = await agreedPair(server);
  assert.is((await setPayout(server, payee, chain.accounts[4]!)).status, 200);
  const asked = await requestPayment(server, payee, {
    deal_id: dealId,
    payer_agent_id: payer.agent_id,
    amount_usdc: '1.00',
    memo: 'nothing signed',
  });
  const path = await servedScript(server, dir);
  const nonce = await chain.publicClient.getTransactionCount({
    address: chain.accounts[4]!.address,
  });
  const run = await runPython(
    [
      path,
      asked.body.pay_url,
      '--submit-authorization',
      '--rpc',
      chain.url,
      '--token',
      payee.api_token,
      '--yes',
    ],
    { SERVICE_PAY_PRIVATE_KEY: privateKeyOf(chain.accounts[4]!) },
  );
  assert.is(run.code, 1, `exit ${run.code}\n${run.stdout}\n${run.stderr}`);
  assert.match(run.stderr, /no signed x402 payment is kept/);
  assert.is(
    await chain.publicClient.getTransactionCount({ address: chain.accounts[4]!.address }),
    nonce,
    'nothing sent',
  );
});

test.run();
