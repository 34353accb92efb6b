import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAbi, type Abi, type Address, type Hex } from 'viem';
import type { HDAccount } from 'viem/accounts';
import { startPaymentWatcher, type PaymentWatcher } from '../../actors/payments/chain/watcher.ts';
import artifacts from '../../actors/payments/contracts/artifacts.json' with { type: 'json' };
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import { agreeAll, dealRoom } from '../helpers/deals.ts';
import { startLiarRpc } from '../helpers/liar-rpc.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, TEST_DATABASE_URL } from '../helpers/storage.ts';
import { creditOfPayment } from '../../storage/payments/transfer-credits.ts';
import { readChainCursor } from '../../storage/payments/chain-cursor.ts';

/**
 * Payments on a real local chain through the HTTP API: the watcher finds a transfer to a
 * deposit address by itself and follows it to confirmed and final; a payer's reported hash is
 * seen at once; what does not pay (another token, recipient or sender, a short amount, a hash
 * already used) is refused; a reorg sends the payment back to requested; an RPC that hangs
 * leaves it unknown, never failed; a restart resumes from the cursor.
 */
/**
 * One chain, and one server on it for the tests that need no setting of their own (a server
 * start is most of a test's time): each makes a deal of its own, and no test's transfer pays a
 * payment another left requested, since each pays a deposit address of its own, or the payee
 * address with a hash it reports first. The tests that need other RPCs or a restart start
 * their own.
 */
type Ctx = { chain: TestChain; server: TestServer };
const test = suite<Ctx>('payments checked on a local chain');

const AMOUNT = 12_500_000n;
type Agent = { agent_id: string; name: string; api_token: string };
type Payment = Record<string, unknown> & {
  payment_id: string;
  status: string;
  deposit_address: string | null;
  check: { result: string; tx_hash: string } | null;
  history: { status: string; tx_hash?: string }[];
};

async function serverOn(
  chain: TestChain,
  rpcUrls = [chain.url],
  databaseUrl?: string,
  rpcTimeoutMs?: number,
) {
  return startTestServer({
    chainRpcUrls: rpcUrls,
    chainId: chain.chainId,
    usdcAddress: chain.usdc,
    forwarderFactoryAddress: chain.factory,
    confirmations: 2,
    // These tests tick their own watcher: the service runs none (CHAIN_POLL_MS=0).
    chainPollMs: 0,
    ...(databaseUrl && { databaseUrl }),
    ...(rpcTimeoutMs !== undefined && { chainRpcTimeoutMs: rpcTimeoutMs }),
  });
}

/** Payee and payer of an agreed deal, each with a payout address of an anvil account. */
async function parties(
  server: TestServer,
  chain: TestChain,
  payerKey: HDAccount,
  payeeKey: HDAccount,
) {
  const {
    workspaceId,
    parties: [payee, payer],
    at,
  } = await dealRoom(server);
  const dealId = await agreeAll(server, [payee, payer] as Agent[], workspaceId, at);
  for (const [agent, key] of [
    [payee, payeeKey],
    [payer, payerKey],
  ] as [Agent, HDAccount][]) {
    const signature = await key.signMessage({
      message: `I control ${key.address} and receive payments for agent ${agent.agent_id}.`,
    });
    const put = await fetch(server.url('/whoami/payout-address'), {
      method: 'PUT',
      headers: { authorization: `Bearer ${agent.api_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ address: key.address, signature }),
    });
    assert.is(put.status, 200, await put.clone().text());
  }
  return { dealId, payee: payee as Agent, payer: payer as Agent };
}

let memos = 0;
async function requestPayment(
  server: TestServer,
  deal: { dealId: string; payee: Agent; payer: Agent },
) {
  const response = await server.post(
    '/payments',
    {
      deal_id: deal.dealId,
      payer_agent_id: deal.payer.agent_id,
      amount_usdc: '12.50',
      memo: `m${++memos}`,
    },
    deal.payee.api_token,
  );
  assert.is(response.status, 201, await response.clone().text());
  return (await response.json()) as Payment;
}

const getPayment = async (server: TestServer, id: string, agent: Agent) =>
  (await (await server.get(`/payments/${id}`, agent.api_token)).json()) as Payment;

const reportTx = (server: TestServer, id: string, hash: string, agent: Agent) =>
  server.post(`/payments/${id}/tx`, { tx_hash: hash }, agent.api_token);

/** Ticks the watcher until the payment reaches `status` (each tick reads the chain once). */
async function tickUntil(
  watcher: PaymentWatcher,
  server: TestServer,
  id: string,
  agent: Agent,
  status: string,
): Promise<Payment> {
  for (let i = 0; i < 20; i += 1) {
    await watcher.tick();
    const payment = await getPayment(server, id, agent);
    if (payment.status === status) return payment;
  }
  const payment = await getPayment(server, id, agent);
  assert.unreachable(`still ${payment.status}, not ${status}: ${JSON.stringify(payment)}`);
  return payment;
}

const roles = (chain: TestChain) => {
  const [, payer, payee, stranger] = chain.accounts;
  if (!payer || !payee || !stranger) throw new Error('too few accounts');
  return { payer, payee, stranger };
};

test.before(async (context) => {
  context.chain = await startAnvil();
  const { payer, stranger } = roles(context.chain);
  await context.chain.mint(payer.address, 100n * AMOUNT);
  await context.chain.mint(stranger.address, 100n * AMOUNT);
  context.server = await serverOn(context.chain);
});

test.after(async ({ chain, server }) => {
  await server.close();
  await chain.stop();
});

test('a transfer to a deposit address is found by the watcher alone, then confirmed, then final', async ({
  chain,
  server,
}) => {
  const watcher = startPaymentWatcher(server.services, (m) => console.log(m), { poll: false });
  try {
    const keys = roles(chain);
    const deal = await parties(server, chain, keys.payer, keys.payee);
    const payment = await requestPayment(server, deal);
    await watcher.tick();
    const sent = await chain.transfer(keys.stranger, payment.deposit_address as Address, AMOUNT);
    const seen = await tickUntil(watcher, server, payment.payment_id, deal.payer, 'seen');
    assert.is(seen.tx_hash, sent.hash);
    await chain.mine(1);
    const confirmed = await tickUntil(watcher, server, payment.payment_id, deal.payee, 'confirmed');
    assert.is((confirmed.evidence as { confirmations: number }).confirmations, 2);
    await chain.mine(70); // anvil's finalized block is 64 below its head
    await tickUntil(watcher, server, payment.payment_id, deal.payee, 'final');

    // Anyone sweeps the deposit address to the payee; that transfer pays no other payment.
    const other = await requestPayment(server, deal);
    await watcher.tick();
    const before = await chain.balanceOf(keys.payee.address);
    await chain.sweep({
      token: chain.usdc,
      payee: keys.payee.address,
      paymentId: payment.payment_id,
    });
    assert.is(await chain.balanceOf(keys.payee.address), before + AMOUNT);
    await chain.mine(3);
    await watcher.tick();
    assert.is((await getPayment(server, other.payment_id, deal.payee)).status, 'requested');
  } finally {
    await watcher.stop();
  }
});

test('one block of many transfers: each payment is credited once, by its first transfer in the block', async ({
  chain,
  server,
}) => {
  const watcher = startPaymentWatcher(server.services, (m) => console.log(m), { poll: false });
  const request = chain.publicClient.request as (args: {
    method: string;
    params: unknown[];
  }) => Promise<unknown>;
  try {
    const keys = roles(chain);
    const deal = await parties(server, chain, keys.payer, keys.payee);
    // More payments than the watcher checks at once, so their receipts are fetched together.
    const payments: Payment[] = [];
    for (let i = 0; i < 11; i += 1) payments.push(await requestPayment(server, deal));
    await watcher.tick();
    const usdc = parseAbi(['function transfer(address to, uint256 value) returns (bool)']);
    const wallet = chain.wallet(keys.stranger);
    let nonce = await chain.publicClient.getTransactionCount({
      address: keys.stranger.address,
      blockTag: 'pending',
    });
    await request({ method: 'evm_setAutomine', params: [false] });
    const hashes: Hex[] = [];
    // The first payment is paid twice in the block: first, then again after all the others.
    for (const payment of [...payments, payments[0] as Payment]) {
      hashes.push(
        await wallet.writeContract({
          address: chain.usdc,
          abi: usdc,
          functionName: 'transfer',
          args: [payment.deposit_address as Address, AMOUNT],
          nonce: nonce++,
          gas: 100_000n,
        }),
      );
    }
    await request({ method: 'evm_mine', params: [] });
    await request({ method: 'evm_setAutomine', params: [true] });
    const blocks = new Set<bigint>();
    for (const hash of hashes) {
      blocks.add((await chain.publicClient.getTransactionReceipt({ hash })).blockNumber);
    }
    assert.is(blocks.size, 1, 'every transfer is in one block');

    for (const [index, payment] of payments.entries()) {
      const seen = await tickUntil(watcher, server, payment.payment_id, deal.payer, 'seen');
      assert.is(seen.tx_hash, hashes[index], `payment ${index} is credited by its own transfer`);
    }
    // The second transfer to the first payment credits nothing, now or later.
    await watcher.tick();
    const first = await getPayment(server, payments[0]!.payment_id, deal.payer);
    assert.is(first.tx_hash, hashes[0]);
    const again = await reportTx(server, payments[0]!.payment_id, hashes[11]!, deal.payer);
    assert.ok(again.status !== 200 || ((await again.json()) as Payment).tx_hash === hashes[0]);
  } finally {
    await request({ method: 'evm_setAutomine', params: [true] });
    await watcher.stop();
  }
});

test('a payer’s reported hash is seen at once; an unconfirmed transfer stays seen', async ({
  chain,
  server,
}) => {
  const keys = roles(chain);
  const deal = await parties(server, chain, keys.payer, keys.payee);
  const payment = await requestPayment(server, deal);
  const sent = await chain.transfer(keys.payer, keys.payee.address, AMOUNT);
  const answer = await reportTx(server, payment.payment_id, sent.hash, deal.payer);
  assert.is(answer.status, 200);
  assert.is(((await answer.json()) as Payment).status, 'seen');
  const again = await reportTx(server, payment.payment_id, sent.hash, deal.payer);
  assert.is(again.status, 200, 'reporting it again changes nothing');
  const watcher = startPaymentWatcher(server.services, (m) => console.log(m), { poll: false });
  await watcher.tick();
  await watcher.stop();
  assert.is((await getPayment(server, payment.payment_id, deal.payer)).status, 'seen');
  // The payee may not report; a stranger gets the 404 of a missing payment.
  assert.is((await reportTx(server, payment.payment_id, sent.hash, deal.payee)).status, 403);
  const stranger = await server.signUp();
  assert.is((await reportTx(server, payment.payment_id, sent.hash, stranger)).status, 404);
});

test('what does not pay is refused with its reason, and a used hash pays once', async ({
  chain,
  server,
}) => {
  const keys = roles(chain);
  const deal = await parties(server, chain, keys.payer, keys.payee);
  const one = await requestPayment(server, deal);
  const two = await requestPayment(server, deal);
  const refused = async (hash: string, reason: string) => {
    const answer = await reportTx(server, one.payment_id, hash, deal.payer);
    assert.is(answer.status, 422);
    const problem = (await answer.json()) as { code: string; reason: string };
    assert.is(problem.code, 'tx_not_matching');
    assert.is(problem.reason, reason);
  };
  await refused(
    (await chain.transfer(keys.payer, keys.stranger.address, AMOUNT)).hash,
    'wrong_recipient',
  );
  await refused(
    (await chain.transfer(keys.payer, keys.payee.address, AMOUNT - 1n)).hash,
    'short_amount',
  );
  await refused(
    (await chain.transfer(keys.stranger, keys.payee.address, AMOUNT)).hash,
    'wrong_sender',
  );
  assert.is((await getPayment(server, one.payment_id, deal.payer)).status, 'requested');

  // One transfer reported for two payments at once: exactly one credit.
  const sent = await chain.transfer(keys.payer, keys.payee.address, AMOUNT);
  const answers = await Promise.all([
    reportTx(server, one.payment_id, sent.hash, deal.payer),
    reportTx(server, two.payment_id, sent.hash, deal.payer),
  ]);
  assert.equal(answers.map((a) => a.status).sort(), [200, 409]);
  const statuses = await Promise.all(
    [one, two].map(async (p) => (await getPayment(server, p.payment_id, deal.payer)).status),
  );
  assert.equal(statuses.sort(), ['requested', 'seen']);
  // And reported again later for the other one: still 409.
  const requested = statuses[0] === 'requested' ? one : two;
  const later = await reportTx(server, requested.payment_id, sent.hash, deal.payer);
  const paid = (await getPayment(server, one.payment_id, deal.payer)).status === 'seen' ? two : one;
  const again = await reportTx(server, paid.payment_id, sent.hash, deal.payer);
  assert.ok([later.status, again.status].includes(409), `${later.status} ${again.status}`);
});

test('a reorg sends the payment back to requested, the dropped hash in its history', async ({
  chain,
  server,
}) => {
  const watcher = startPaymentWatcher(server.services, (m) => console.log(m), { poll: false });
  try {
    const keys = roles(chain);
    const deal = await parties(server, chain, keys.payer, keys.payee);
    const payment = await requestPayment(server, deal);
    await watcher.tick();
    const before = await chain.snapshot();
    const sent = await chain.transfer(keys.payer, payment.deposit_address as Address, AMOUNT);
    await tickUntil(watcher, server, payment.payment_id, deal.payer, 'seen');
    await chain.revert(before);
    await chain.mine(3);
    const back = await tickUntil(watcher, server, payment.payment_id, deal.payer, 'requested');
    assert.ok(
      back.history.some((entry) => entry.status === 'requested' && entry.tx_hash === sent.hash),
    );
    assert.is(back.tx_hash, null);
    assert.is(await creditOfPayment(server.services.driver, payment.payment_id), null, 'released');
  } finally {
    await watcher.stop();
  }
});

test('an RPC that never answers leaves the payment unknown, never failed or confirmed', async ({
  chain,
}) => {
  const silent = await startLiarRpc('silent');
  // CHAIN_RPC_TIMEOUT_MS: a silent RPC costs 300 ms (and one retry), not the default 5 s.
  const server = await serverOn(chain, [chain.url, silent.url], undefined, 300);
  try {
    const keys = roles(chain);
    const deal = await parties(server, chain, keys.payer, keys.payee);
    const payment = await requestPayment(server, deal);
    const sent = await chain.transfer(keys.payer, keys.payee.address, AMOUNT);
    const answer = await reportTx(server, payment.payment_id, sent.hash, deal.payer);
    assert.is(answer.status, 200);
    const body = (await answer.json()) as Payment & { reported_tx_hash: string };
    assert.is(body.status, 'requested');
    assert.is(body.check?.result, 'unknown');
    assert.is(body.check?.tx_hash, sent.hash);
    assert.is(body.reported_tx_hash, sent.hash);
  } finally {
    await server.close();
    await silent.stop();
  }
});

test('the public report credits only a transfer that pays, and never replaces the payer’s report', async ({
  chain,
  server,
}) => {
  const keys = roles(chain);
  const deal = await parties(server, chain, keys.payer, keys.payee);
  const payment = await requestPayment(server, deal);
  const publicReport = (hash: string, id = payment.payment_id) =>
    server.post(`/pay/${id}/tx`, { tx_hash: hash });
  const never = `0x${'12'.repeat(32)}`;
  const mine = await reportTx(server, payment.payment_id, never, deal.payer);
  assert.is(((await mine.json()) as Payment).check?.tx_hash, never);

  const strangers = `0x${'34'.repeat(32)}`;
  const told = await publicReport(strangers);
  assert.is(told.status, 200);
  const answer = (await told.json()) as Payment & { reported_tx_hash: string };
  assert.is(answer.check?.result, 'unknown');
  assert.is(answer.check?.tx_hash, strangers, 'the caller hears about its own hash');
  assert.is(answer.reported_tx_hash, never);
  assert.not.ok('payer_agent_id' in answer, 'the public answer names no party');
  const kept = (await getPayment(server, payment.payment_id, deal.payer)) as Payment & {
    reported_tx_hash: string;
  };
  assert.is(kept.reported_tx_hash, never, 'a stranger’s hash is not kept');
  assert.is(kept.check?.tx_hash, never);

  const foreign = await chain.transfer(keys.stranger, keys.payee.address, AMOUNT);
  const refused = await publicReport(foreign.hash);
  assert.is(refused.status, 422);
  assert.is(((await refused.json()) as { reason: string }).reason, 'wrong_sender');

  const missing = await publicReport(never, '00000000-0000-4000-8000-000000000000');
  assert.is(missing.status, 404);

  const paid = await chain.transfer(keys.stranger, payment.deposit_address as Address, AMOUNT);
  const credited = await publicReport(paid.hash);
  assert.is(credited.status, 200);
  assert.is(((await credited.json()) as Payment).status, 'seen');
});

test('another token’s Transfer to the deposit address is never credited', async ({
  chain,
  server,
}) => {
  const watcher = startPaymentWatcher(server.services, (m) => console.log(m), { poll: false });
  try {
    const keys = roles(chain);
    const deal = await parties(server, chain, keys.payer, keys.payee);
    const payment = await requestPayment(server, deal);
    await watcher.tick();
    const wallet = chain.wallet(keys.payer);
    const deployed = await wallet.deployContract({
      abi: artifacts.TestUsdc.abi as Abi,
      bytecode: artifacts.TestUsdc.bytecode as Hex,
    });
    const receipt = await chain.publicClient.waitForTransactionReceipt({ hash: deployed });
    const other = receipt.contractAddress as Address;
    const token = parseAbi([
      'function mint(address to, uint256 value)',
      'function transfer(address to, uint256 value) returns (bool)',
    ]);
    await chain.publicClient.waitForTransactionReceipt({
      hash: await wallet.writeContract({
        address: other,
        abi: token,
        functionName: 'mint',
        args: [keys.payer.address, AMOUNT],
      }),
    });
    const hash = await wallet.writeContract({
      address: other,
      abi: token,
      functionName: 'transfer',
      args: [payment.deposit_address as Address, AMOUNT],
    });
    await chain.publicClient.waitForTransactionReceipt({ hash });
    await watcher.tick();
    await watcher.tick();
    assert.is((await getPayment(server, payment.payment_id, deal.payer)).status, 'requested');
    const answer = await reportTx(server, payment.payment_id, hash, deal.payer);
    assert.is(answer.status, 422);
    assert.is(((await answer.json()) as { reason: string }).reason, 'wrong_token');
  } finally {
    await watcher.stop();
  }
});

test('an RPC that answers nonsense: the watcher credits nothing and says unknown', async ({
  chain,
}) => {
  const liar = await startLiarRpc('nonsense');
  const server = await serverOn(chain, [chain.url, liar.url]);
  const lines: string[] = [];
  const watcher = startPaymentWatcher(server.services, (m) => lines.push(m), { poll: false });
  try {
    const keys = roles(chain);
    const deal = await parties(server, chain, keys.payer, keys.payee);
    const payment = await requestPayment(server, deal);
    await watcher.tick();
    const sent = await chain.transfer(keys.payer, payment.deposit_address as Address, AMOUNT);
    await chain.mine(5);
    for (let i = 0; i < 3; i += 1) await watcher.tick();
    const seen = await getPayment(server, payment.payment_id, deal.payer);
    assert.is(seen.status, 'requested');
    assert.is(seen.check?.result, 'unknown');
    assert.is(seen.check?.tx_hash, sent.hash);
    assert.ok(liar.calls.size > 0);
    // Its block is read again every tick until every RPC can tell: the cursor waits before it.
    const cursor = await readChainCursor(server.services.driver, chain.chainId);
    assert.ok(cursor !== null && cursor < Number(sent.blockNumber), `cursor ${cursor}`);
  } finally {
    await watcher.stop();
    await server.close();
    await liar.stop();
  }
});

test('one watcher at a time: a held lease makes the others wait', async ({ server }) => {
  const watcher = startPaymentWatcher(server.services, (m) => console.log(m), { poll: false });
  try {
    assert.is(await watcher.tick(), true);
    const db = server.services.driver;
    await db.query(`update scheduled_jobs set next_run_at = $2 where name = $1`, [
      'payments.chain_watcher',
      new Date(Date.now() + 3_600_000),
    ]);
    assert.is(await watcher.tick(), false, 'another process holds it');
    await db.query(`update scheduled_jobs set next_run_at = $2 where name = $1`, [
      'payments.chain_watcher',
      new Date(Date.now() - 1),
    ]);
    assert.is(await watcher.tick(), true, 'it ran out');
  } finally {
    await watcher.stop();
  }
});

test('a restart resumes from the cursor: a transfer made while stopped is found', async ({
  chain,
}) => {
  const databaseUrl = TEST_DATABASE_URL ? await freshDatabaseUrl() : undefined;
  const first = await serverOn(chain, [chain.url], databaseUrl);
  const keys = roles(chain);
  const deal = await parties(first, chain, keys.payer, keys.payee);
  const payment = await requestPayment(first, deal);
  const watcher = startPaymentWatcher(first.services, (m) => console.log(m), { poll: false });
  await watcher.tick();
  await watcher.stop();
  // PostgreSQL: a new server process on the same database; PGlite (one process): a new watcher.
  const second = databaseUrl
    ? (await first.close(), await serverOn(chain, [chain.url], databaseUrl))
    : first;
  const sent = await chain.transfer(keys.payer, payment.deposit_address as Address, AMOUNT);
  await chain.mine(10);
  const again = startPaymentWatcher(second.services, (m) => console.log(m), { poll: false });
  try {
    await again.tick();
    const found = await getPayment(second, payment.payment_id, deal.payer);
    assert.is(found.tx_hash, sent.hash);
    assert.is(found.status, 'confirmed', 'found and, ten blocks deep, confirmed in one tick');
  } finally {
    await again.stop();
    await second.close();
  }
});

test.run();
