import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { keccak256, toHex } from 'viem';
import { privateKeyOf, startAnvil, type TestChain } from '../helpers/chain.ts';
import { callJson } from '../helpers/http.ts';
import { agreedPair, chainConfig, requestPayment, setPayout } from '../helpers/payments-core.ts';
import { runPython } from '../helpers/python.ts';
import { clientSuite, type ExternalClient } from '../helpers/real-clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The pay script (served at /pay/service_pay.py) against the real service's instructions: once
 * the payer reported a transaction that is still being checked, `pay` carries it as
 * `reported_tx_hash` and the script, run again, refuses to pay a second time and sends nothing.
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
const test = clientSuite<Context>(
  'the pay script follows the service’s instructions: reported_tx_hash and rpc_url',
  PYTHON,
);

test.before(async (context) => {
  context.chain = await startAnvil();
  context.server = await startTestServer(chainConfig(context.chain));
  context.dir = mkdtempSync(join(tmpdir(), 'pay-script-reported-'));
});
test.after(async ({ chain, server, dir }) => {
  await server.close();
  await chain.stop();
  rmSync(dir, { recursive: true, force: true });
});

test('with a reported transaction still being checked the script exits 1 naming it and sends nothing', async ({
  chain,
  server,
  dir,
}) => {
  const { payee, payer, dealId } = await agreedPair(server);
  const payerAccount = chain.accounts[6]!;
  assert.is((await setPayout(server, payee, chain.accounts[4]!)).status, 200);
  assert.is((await setPayout(server, payer, payerAccount)).status, 200);
  await chain.mint(payerAccount.address, 50_000_000n);
  const asked = await requestPayment(server, payee, {
    deal_id: dealId,
    payer_agent_id: payer.agent_id,
    amount_usdc: '1.50',
    memo: `memo ${randomUUID()}`,
  });
  assert.is(asked.status, 201, JSON.stringify(asked.body));
  const hash = keccak256(toHex(`sent from elsewhere ${randomUUID()}`));
  const reported = await callJson(
    server,
    'POST',
    `/payments/${asked.body.payment_id}/tx`,
    payer.api_token,
    { tx_hash: hash },
  );
  assert.is(reported.status, 200, JSON.stringify(reported.body));

  const script = await fetch(server.url('/pay/service_pay.py'));
  const path = join(dir, 'service_pay.py');
  writeFileSync(path, Buffer.from(await script.arrayBuffer()));
  const nonceBefore = await chain.publicClient.getTransactionCount({
    address: payerAccount.address,
  });
  const balanceBefore = await chain.balanceOf(payerAccount.address);
  const run = await runPython(
    [path, asked.body.pay_url, '--rpc', chain.url, '--yes', '--wait', '5'],
    { SERVICE_PAY_PRIVATE_KEY: privateKeyOf(payerAccount) },
  );
  assert.is(run.code, 1, `exit ${run.code}\n${run.stdout}\n${run.stderr}`);
  assert.ok(`${run.stdout}${run.stderr}`.includes(hash), 'it names the reported transaction');
  assert.is(
    await chain.publicClient.getTransactionCount({ address: payerAccount.address }),
    nonceBefore,
    'nothing sent',
  );
  assert.is(await chain.balanceOf(payerAccount.address), balanceBefore);
});

test('without --rpc the script sends through the instructions’ rpc_url (PUBLIC_RPC_URL)', async ({
  chain,
  dir,
}) => {
  // A public RPC that refuses connections: the script must try exactly it, and send nothing.
  const unreachable = 'http://127.0.0.1:9/public-rpc';
  const server = await startTestServer({ ...chainConfig(chain), publicRpcUrl: unreachable });
  try {
    const { payee, payer, dealId } = await agreedPair(server);
    const payerAccount = chain.accounts[7]!;
    assert.is((await setPayout(server, payee, chain.accounts[4]!)).status, 200);
    assert.is((await setPayout(server, payer, payerAccount)).status, 200);
    const asked = await requestPayment(server, payee, {
      deal_id: dealId,
      payer_agent_id: payer.agent_id,
      amount_usdc: '1.50',
      memo: `memo ${randomUUID()}`,
    });
    assert.is(asked.status, 201, JSON.stringify(asked.body));
    const path = join(dir, 'service_pay.py');
    writeFileSync(
      path,
      Buffer.from(await (await fetch(server.url('/pay/service_pay.py'))).arrayBuffer()),
    );
    const run = await runPython([path, asked.body.pay_url, '--yes', '--wait', '5'], {
      SERVICE_PAY_PRIVATE_KEY: privateKeyOf(payerAccount),
    });
    assert.is(run.code, 3, `exit ${run.code}\n${run.stdout}\n${run.stderr}`);
    assert.ok(run.stdout.includes(`via ${unreachable}`), run.stdout);
    assert.not.ok(`${run.stdout}${run.stderr}`.includes(chain.url), 'never the service’s own RPC');
  } finally {
    await server.close();
  }
});

test.run();
