import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { depositAddress } from '../../actors/payments/chain/deposit-address.ts';
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import { newChanges, ofType } from '../helpers/changes.ts';
import { moveClock } from '../helpers/chat.ts';
import { callTool, connectMcp, toolProblem } from '../helpers/clients.ts';
import { TestClock } from '../helpers/clock.ts';
import { callJson } from '../helpers/http.ts';
import {
  agreedPair,
  chainConfig,
  draftPair,
  getPayment,
  proofMessage,
  readLog,
  requestPayment,
  requestedPayment,
  setPayout,
} from '../helpers/payments-core.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';

/**
 * Payments as the parties ask for them (actors/payments/): the payout address proof, requesting
 * a payment and every refusal of it, who sees a payment, `pay` without a token, the workspace
 * log, and expiry on a clock the test moves. The chain-driven moves (seen, confirmed, final,
 * reorgs) have their own tests.
 */
const test = suite<{ chain: TestChain; server: TestServer; clock: TestClock }>(
  'payments: payout addresses and requests',
);

const HOUR = 3600_000;

test.before(async (context) => {
  context.chain = await startAnvil();
  context.clock = new TestClock(Date.now());
  context.server = await startTestServer({ ...chainConfig(context.chain), clock: context.clock });
});
test.after(async ({ server }) => {
  await server.close();
});

test('a payout address is set with a signature of the exact sentence by its key, and shown in EIP-55 form', async ({
  server,
  chain,
}) => {
  const agent = await server.signUp();
  const missing = await callJson(server, 'GET', '/whoami/payout-address', agent.api_token);
  assert.is(missing.status, 404);
  const account = chain.accounts[1]!;
  const lower = account.address.toLowerCase();
  const set = await setPayout(server, agent, account, undefined, lower);
  assert.is(set.status, 200, JSON.stringify(set.body));
  assert.is(set.body.address, account.address);
  const shown = await callJson<{ address: string }>(
    server,
    'GET',
    '/whoami/payout-address',
    agent.api_token,
  );
  assert.equal([shown.status, shown.body.address], [200, account.address]);
});

test('a payout address proof signed by another key, or of another sentence, is refused with 422 address_proof_invalid and keeps nothing', async ({
  server,
  chain,
}) => {
  const agent = await server.signUp();
  const [mine, other] = [chain.accounts[2]!, chain.accounts[3]!];
  const byOther = await callJson(server, 'PUT', '/whoami/payout-address', agent.api_token, {
    address: mine.address,
    signature: await other.signMessage({ message: proofMessage(mine.address, agent.agent_id) }),
  });
  assert.is(byOther.status, 422);
  assert.is(byOther.body.code, 'address_proof_invalid');
  for (const message of [
    proofMessage(mine.address, randomUUID()),
    proofMessage(mine.address.toLowerCase(), agent.agent_id),
    `${proofMessage(mine.address, agent.agent_id)}\n`,
  ]) {
    const wrong = await setPayout(server, agent, mine, message);
    assert.is(wrong.status, 422, message);
    assert.is(wrong.body.code, 'address_proof_invalid');
  }
  const nonsense = await callJson(server, 'PUT', '/whoami/payout-address', agent.api_token, {
    address: mine.address,
    signature: `0x${'ff'.repeat(65)}`,
  });
  assert.is(nonsense.status, 422);
  const kept = await callJson(server, 'GET', '/whoami/payout-address', agent.api_token);
  assert.is(kept.status, 404, 'nothing was stored');
});

test('request_payment answers where to pay, the deposit address is the CREATE2 forwarder of the payment, both parties hear payment.requested and the log has its line', async ({
  server,
  chain,
}) => {
  const { payee, payer, dealId, workspaceId } = await agreedPair(server);
  const payeeAccount = chain.accounts[4]!;
  assert.is((await setPayout(server, payee, payeeAccount)).status, 200);
  await newChanges(server, payee);
  await newChanges(server, payer);

  const payment = await requestedPayment(
    server,
    { payee, payer, dealId },
    '12.50',
    'logo, first half',
  );
  const expected = depositAddress({
    factory: chain.factory,
    token: chain.usdc,
    payee: payeeAccount.address,
    paymentId: payment.payment_id,
  });
  assert.equal(
    {
      status: payment.status,
      amount_usdc: payment.amount_usdc,
      amount_units: payment.amount_units,
      memo: payment.memo,
      chain_id: payment.chain_id,
      token_address: payment.token_address,
      payee_address: payment.payee_address,
      deposit_address: payment.deposit_address,
      pay_to: payment.pay_to,
      pay_url: payment.pay_url,
      tx_hash: payment.tx_hash,
      payer: payment.payer_agent_id,
      payee: payment.payee_agent_id,
    },
    {
      status: 'requested',
      amount_usdc: '12.50',
      amount_units: '12500000',
      memo: 'logo, first half',
      chain_id: 8453,
      token_address: chain.usdc,
      payee_address: payeeAccount.address,
      deposit_address: expected,
      pay_to: expected,
      pay_url: server.url(`/pay/${payment.payment_id}`),
      tx_hash: null,
      payer: payer.agent_id,
      payee: payee.agent_id,
    },
  );
  assert.is(
    new Date(payment.expires_at).getTime() - new Date(payment.created_at as string).getTime(),
    168 * HOUR,
    'expires after PAYMENT_EXPIRY_HOURS (7 days)',
  );

  for (const agent of [payee, payer]) {
    const heard = ofType(await newChanges(server, agent), 'payment.requested');
    assert.is(heard.length, 1);
    assert.equal(heard[0]!.data, {
      payment_id: payment.payment_id,
      deal_id: dealId,
      status: 'requested',
      amount_usdc: '12.50',
      memo: 'logo, first half',
      payer_agent_id: payer.agent_id,
      payee_agent_id: payee.agent_id,
    });
  }
  const log = await readLog(server, payer, workspaceId);
  assert.is(log.status, 200);
  assert.equal(
    log.body.lines.map((line) => [line.kind, line.payment_id]),
    [['payment.requested', payment.payment_id]],
  );

  // Both parties see it whole; `pay` needs no token and says what to send.
  for (const agent of [payee, payer]) {
    const shown = await getPayment(server, agent, payment.payment_id);
    assert.is(shown.status, 200);
    assert.is(shown.body.deposit_address, expected);
  }
  const instructions = await callJson<Record<string, unknown>>(
    server,
    'GET',
    `/pay/${payment.payment_id}`,
    null,
  );
  assert.is(instructions.status, 200, JSON.stringify(instructions.body));
  assert.equal(
    [instructions.body.pay_to, instructions.body.amount_units, instructions.body.token_address],
    [expected, '12500000', chain.usdc],
  );
  assert.is(instructions.body.report_url, server.url(`/pay/${payment.payment_id}/tx`));
});

test('a new payout address is news to both parties of each open payment, which keeps the address it was requested with', async ({
  server,
  chain,
}) => {
  const { payee, payer, dealId } = await agreedPair(server);
  const first = chain.accounts[5]!;
  const second = chain.accounts[6]!;
  assert.is((await setPayout(server, payee, first)).status, 200);
  const payment = await requestedPayment(
    server,
    { payee, payer, dealId },
    '3.00',
    'before the new address',
  );
  await newChanges(server, payee);
  await newChanges(server, payer);

  assert.is((await setPayout(server, payee, second)).status, 200);
  for (const agent of [payer, payee]) {
    const [changed] = ofType(await newChanges(server, agent), 'payout_address.changed');
    assert.ok(changed, `${agent.name} hears payout_address.changed`);
    assert.equal(changed.data, {
      agent_id: payee.agent_id,
      address: second.address,
      previous_address: first.address,
      payment_ids: [payment.payment_id],
    });
    assert.is(changed.actor?.agent_id, payee.agent_id);
  }
  const open = await getPayment(server, payer, payment.payment_id);
  assert.is(open.body.payee_address, first.address, 'the open payment keeps its address');
  // Setting the same address again is no news.
  assert.is((await setPayout(server, payee, second)).status, 200);
  assert.equal(ofType(await newChanges(server, payer), 'payout_address.changed'), []);
});

test('a payment is shown to its two parties only: a stranger, or a member of the workspace that is no party, gets the 404 of a payment that does not exist', async ({
  server,
  chain,
}) => {
  const { payee, payer, dealId } = await agreedPair(server);
  await setPayout(server, payee, chain.accounts[4]!);
  const payment = await requestedPayment(server, { payee, payer, dealId }, '1', 'visibility');
  const stranger = await server.signUp();
  const hidden = await getPayment(server, stranger, payment.payment_id);
  const missing = await getPayment(server, stranger, randomUUID());
  assert.equal([hidden.status, hidden.body.code], [404, 'not_found']);
  assert.equal(
    [hidden.body.code, hidden.body.detail],
    [missing.body.code, missing.body.detail],
    'the same refusal',
  );
});

test('request_payment refuses every bad input with its code and writes nothing', async ({
  server,
  chain,
}) => {
  const { payee, payer, dealId, workspaceId } = await agreedPair(server);
  const bare = { deal_id: dealId, payer_agent_id: payer.agent_id, amount_usdc: '5', memo: 'm' };

  const noAddress = await requestPayment(server, payee, bare);
  assert.equal([noAddress.status, noAddress.body.code], [409, 'payout_address_missing']);
  await setPayout(server, payee, chain.accounts[5]!);

  for (const amount of [
    '1.0000001',
    '0',
    '0.000000',
    '-1',
    '+1',
    '1e3',
    '1000000000000',
    '01',
    '.5',
    '1.',
    ' 1',
    '',
    12.5,
    1,
    null,
  ]) {
    const refused = await requestPayment(server, payee, { ...bare, amount_usdc: amount });
    assert.is(refused.status, 400, `amount ${JSON.stringify(amount)}`);
    assert.is(refused.body.code, 'invalid_input', `amount ${JSON.stringify(amount)}`);
  }
  const outsider = await server.signUp();
  for (const payerId of [payee.agent_id, outsider.agent_id, randomUUID()]) {
    const refused = await requestPayment(server, payee, { ...bare, payer_agent_id: payerId });
    assert.equal([refused.status, refused.body.code], [400, 'invalid_input'], payerId);
  }
  for (const memo of ['', 'x'.repeat(141), 'line\nbreak']) {
    const refused = await requestPayment(server, payee, { ...bare, memo });
    assert.equal([refused.status, refused.body.code], [400, 'invalid_input'], memo);
  }
  // Not a party (and no member of the deal's workspace): the 404 of a deal that does not exist.
  const strangerAsks = await requestPayment(server, outsider, bare);
  assert.equal([strangerAsks.status, strangerAsks.body.code], [404, 'not_found']);
  const unknownDeal = await requestPayment(server, payee, { ...bare, deal_id: randomUUID() });
  assert.equal([unknownDeal.status, unknownDeal.body.code], [404, 'not_found']);

  const first = await requestPayment(server, payee, bare);
  assert.is(first.status, 201);
  const again = await requestPayment(server, payee, { ...bare, amount_usdc: '6' });
  assert.equal([again.status, again.body.code], [409, 'memo_not_unique']);

  const log = await readLog(server, payee, workspaceId);
  assert.equal(
    log.body.lines.map((line) => line.payment_id),
    [first.body.payment_id],
    'only the one payment made it',
  );
});

test('request_payment on a deal not agreed yet answers 409 deal_not_agreed', async ({
  server,
  chain,
}) => {
  const { payee, payer, dealId } = await draftPair(server);
  await setPayout(server, payee, chain.accounts[6]!);
  const refused = await requestPayment(server, payee, {
    deal_id: dealId,
    payer_agent_id: payer.agent_id,
    amount_usdc: '5',
    memo: 'too early',
  });
  assert.equal([refused.status, refused.body.code], [409, 'deal_not_agreed']);
});

test('MCP lists the payment tools, and request_payment and get_payment work through it', async ({
  server,
  chain,
}) => {
  const { payee, payer, dealId } = await agreedPair(server);
  await setPayout(server, payee, chain.accounts[7]!);
  const client = await connectMcp(server, payee.api_token, 'payments-test');
  try {
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    for (const name of [
      'request_payment',
      'pay',
      'record_offchain_payment',
      'confirm_offchain_payment',
      'set_payout_address',
      'get_payment',
      'read_log',
    ]) {
      assert.ok(names.includes(name), name);
    }
    const asked = await callTool(client, 'request_payment', {
      deal_id: dealId,
      payer_agent_id: payer.agent_id,
      amount_usdc: '0.000001',
      memo: 'through MCP',
    });
    assert.not.ok(asked.isError, asked.content[0]?.text);
    const paymentId = (asked.structuredContent ?? JSON.parse(asked.content[0]!.text)).payment_id;
    const shown = await callTool(client, 'get_payment', { payment_id: paymentId });
    assert.not.ok(shown.isError);
    assert.match(shown.content[0]!.text, /"amount_usdc":\s*"0.000001"/);
    const number = await callTool(client, 'request_payment', {
      deal_id: dealId,
      payer_agent_id: payer.agent_id,
      amount_usdc: 1.5,
      memo: 'a float',
    });
    assert.ok(number.isError);
    assert.is(toolProblem(number).code, 'invalid_input');
  } finally {
    await client.close();
  }
});

test('read_log is for members of the workspace, newest first, a page at a time', async ({
  server,
  chain,
}) => {
  const { payee, payer, dealId, workspaceId } = await agreedPair(server);
  await setPayout(server, payee, chain.accounts[8]!);
  const ids: string[] = [];
  for (const memo of ['one', 'two', 'three']) {
    const asked = await requestPayment(server, payee, {
      deal_id: dealId,
      payer_agent_id: payer.agent_id,
      amount_usdc: '2',
      memo,
    });
    ids.push(asked.body.payment_id);
  }
  const seen: (string | null)[] = [];
  let cursor: string | null = null;
  do {
    const page = await readLog(
      server,
      payer,
      workspaceId,
      `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    assert.is(page.status, 200, JSON.stringify(page.body));
    assert.ok(page.body.lines.length <= 2);
    seen.push(...page.body.lines.map((line) => line.payment_id));
    cursor = page.body.next_cursor;
  } while (cursor);
  assert.equal(seen, [...ids].reverse());
  const stranger = await server.signUp();
  const refused = await readLog(server, stranger as Agent, workspaceId);
  assert.equal([refused.status, refused.body.code], [404, 'not_found']);
  const forged = await readLog(server, payer, workspaceId, '?cursor=bm9wZQ');
  assert.equal([forged.status, forged.body.code], [400, 'invalid_cursor']);
});

test('a payment not paid in time expires through the job: both parties hear payment.expired and the log says so', async ({
  server,
  chain,
  clock,
}) => {
  const { payee, payer, dealId, workspaceId } = await agreedPair(server);
  await setPayout(server, payee, chain.accounts[4]!);
  const payment = await requestedPayment(server, { payee, payer, dealId }, '3', 'will expire');
  await newChanges(server, payee);
  await newChanges(server, payer);
  await moveClock(server, clock, 168 * HOUR - 60_000);
  assert.is((await getPayment(server, payer, payment.payment_id)).body.status, 'requested');
  // Past its time, then one more run of the five-minutely job.
  await moveClock(server, clock, 2 * 60_000);
  await moveClock(server, clock, 5 * 60_000);
  const after = await getPayment(server, payer, payment.payment_id);
  assert.is(after.body.status, 'expired');
  for (const agent of [payee, payer]) {
    const heard = ofType(await newChanges(server, agent), 'payment.expired');
    assert.equal(
      heard.map((change) => change.data.payment_id),
      [payment.payment_id],
    );
  }
  const log = await readLog(server, payee, workspaceId, '?limit=1');
  assert.equal(
    [log.body.lines[0]?.kind, log.body.lines[0]?.payment_id],
    ['payment.expired', payment.payment_id],
  );
  const instructions = await callJson<{ steps: string[]; status: string }>(
    server,
    'GET',
    `/pay/${payment.payment_id}`,
    null,
  );
  assert.is(instructions.body.status, 'expired');
  assert.match(instructions.body.steps[0]!, /do not pay/);
});

test.run();

const offline = suite<{ server: TestServer }>('payments: a service without a chain');
offline.before(async (context) => {
  context.server = await startTestServer({ chainRpcUrls: [] });
});
offline.after(async ({ server }) => {
  await server.close();
});

offline('without an RPC, request_payment answers 503 chain_not_configured', async ({ server }) => {
  const { payee, payer, dealId } = await agreedPair(server);
  const refused = await requestPayment(server, payee, {
    deal_id: dealId,
    payer_agent_id: payer.agent_id,
    amount_usdc: '5',
    memo: 'nothing to check it on',
  });
  assert.equal([refused.status, refused.body.code], [503, 'chain_not_configured']);
});

offline.run();
