import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAbi, type Abi, type Address, type Hex } from 'viem';
import {
  CREDITING_RULES,
  type CreditingRule,
  type CreditingRuleName,
} from '../../actors/payments/chain/crediting-rules.ts';
import { startPaymentWatcher, type PaymentWatcher } from '../../actors/payments/chain/watcher.ts';
import artifacts from '../../actors/payments/contracts/artifacts.json' with { type: 'json' };
import type { Config } from '../../server/config.ts';
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import { reputationOf } from '../helpers/deals.ts';
import { callJson } from '../helpers/http.ts';
import {
  agreedPair,
  bury,
  chainConfig,
  getPayment,
  partyKeys as keys,
  type PaymentBody,
  requestedPayment,
  setPayout,
} from '../helpers/payments-core.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';

/**
 * The crediting rules (actors/payments/chain/crediting-rules.ts), one row each, on a real chain
 * through the HTTP door: each row makes a transfer that breaks exactly one rule, and it is never
 * credited, neither by the payer's report, nor by the public report, nor by the watcher, nor 70
 * blocks later; the transfer that breaks none is credited and turns final. The rows are checked
 * against the table, so a new rule without a row fails here.
 */
const test = suite<{ chain: TestChain }>('the crediting rules, one broken at a time');

const AMOUNT = 7_000_000n;
const ERC20 = parseAbi([
  'function mint(address to, uint256 value)',
  'function transfer(address to, uint256 value) returns (bool)',
]);

/** One payment on a server of its own (its watcher sees only this case's payments). */
interface Case {
  server: TestServer;
  watcher: PaymentWatcher;
  payee: Agent;
  payer: Agent;
  payment: PaymentBody;
  txHash: Hex;
  /** Payments of the payee that the case itself credited (the `once` row's first payment). */
  finalElsewhere: number;
}

/**
 * A server on `chain` (its own watcher ticked by hand, the cursor set at the head now) and an
 * agreed deal whose parties have proved the payer and payee anvil keys as payout addresses.
 */
async function open(chain: TestChain, config: Partial<Config> = {}) {
  const server = await startTestServer({ ...chainConfig(chain), chainPollMs: 0, ...config });
  const watcher = startPaymentWatcher(server.services, (line) => console.log(line), {
    poll: false,
  });
  await watcher.tick();
  const pair = await agreedPair(server);
  const { payer, payee } = keys(chain);
  assert.is((await setPayout(server, pair.payee, payee)).status, 200);
  assert.is((await setPayout(server, pair.payer, payer)).status, 200);
  let memos = 0;
  const ask = () => requestedPayment(server, pair, '7.00', `invoice ${++memos}`);
  const made = (payment: PaymentBody, txHash: Hex, finalElsewhere = 0): Case => ({
    server,
    watcher,
    payee: pair.payee,
    payer: pair.payer,
    payment,
    txHash,
    finalElsewhere,
  });
  return { server, watcher, ask, made };
}

/** A second token contract, the same TestUsdc code at another address, with `units` minted. */
async function otherToken(chain: TestChain, units: bigint): Promise<Address> {
  const wallet = chain.wallet(keys(chain).payer);
  const deployed = await chain.publicClient.waitForTransactionReceipt({
    hash: await wallet.deployContract({
      abi: artifacts.TestUsdc.abi as Abi,
      bytecode: artifacts.TestUsdc.bytecode as Hex,
    }),
  });
  const token = deployed.contractAddress as Address;
  await chain.publicClient.waitForTransactionReceipt({
    hash: await wallet.writeContract({
      address: token,
      abi: ERC20,
      functionName: 'mint',
      args: [keys(chain).payer.address, units],
    }),
  });
  return token;
}

interface Row {
  /** The one rule its transfer breaks; null: the transfer that breaks none. */
  breaks: CreditingRuleName | null;
  make(chain: TestChain): Promise<Case>;
}

/**
 * The transfer that breaks none: from the payer, to the payment's deposit address, of the
 * amount, in a block after the request. Each other row changes one thing of it.
 */
const ROWS: Row[] = [
  {
    breaks: null,
    async make(chain) {
      const { ask, made } = await open(chain);
      const payment = await ask();
      const sent = await chain.transfer(keys(chain).payer, payment.pay_to as Address, AMOUNT);
      return made(payment, sent.hash);
    },
  },
  {
    // The service believes it follows chain 31337; its RPC serves 8453, where the transfer is.
    breaks: 'chain',
    async make(chain) {
      const { ask, made } = await open(chain, { chainId: 31337 });
      const payment = await ask();
      assert.is(payment.chain_id, 31337);
      const sent = await chain.transfer(keys(chain).payer, payment.pay_to as Address, AMOUNT);
      return made(payment, sent.hash);
    },
  },
  {
    // Sent before the request (to the payee address: a deposit address exists only after it).
    breaks: 'after_request',
    async make(chain) {
      const { ask, made } = await open(chain);
      const sent = await chain.transfer(keys(chain).payer, keys(chain).payee.address, AMOUNT);
      const payment = await ask();
      return made(payment, sent.hash);
    },
  },
  {
    breaks: 'token',
    async make(chain) {
      const token = await otherToken(chain, AMOUNT);
      const { ask, made } = await open(chain);
      const payment = await ask();
      const hash = await chain.wallet(keys(chain).payer).writeContract({
        address: token,
        abi: ERC20,
        functionName: 'transfer',
        args: [payment.pay_to as Address, AMOUNT],
      });
      await chain.publicClient.waitForTransactionReceipt({ hash });
      return made(payment, hash);
    },
  },
  {
    breaks: 'recipient',
    async make(chain) {
      const { ask, made } = await open(chain);
      const payment = await ask();
      const sent = await chain.transfer(keys(chain).payer, keys(chain).stranger.address, AMOUNT);
      return made(payment, sent.hash);
    },
  },
  {
    // To the payee address, which counts only from the payer's payout address.
    breaks: 'sender',
    async make(chain) {
      const { ask, made } = await open(chain);
      const payment = await ask();
      const sent = await chain.transfer(keys(chain).stranger, keys(chain).payee.address, AMOUNT);
      return made(payment, sent.hash);
    },
  },
  {
    breaks: 'amount',
    async make(chain) {
      const { ask, made } = await open(chain);
      const payment = await ask();
      const sent = await chain.transfer(keys(chain).payer, payment.pay_to as Address, AMOUNT - 1n);
      return made(payment, sent.hash);
    },
  },
  {
    // One transfer to the payee address, after two requests alike: it pays the first only.
    breaks: 'once',
    async make(chain) {
      const { server, ask, made } = await open(chain);
      const first = await ask();
      const second = await ask();
      const sent = await chain.transfer(keys(chain).payer, keys(chain).payee.address, AMOUNT);
      const credited = await server.post(`/pay/${first.payment_id}/tx`, { tx_hash: sent.hash });
      assert.is(credited.status, 200);
      assert.is(((await credited.json()) as PaymentBody).status, 'seen');
      return made(second, sent.hash, 1);
    },
  },
];

/** What a report of a transfer that breaks `rule` answers, as the table says. */
function expectRefusal(rule: CreditingRule, answer: { status: number; body: PaymentBody }) {
  const body = answer.body as PaymentBody & {
    reason?: string;
    check?: { result: string } | null;
  };
  if (rule.outcome === 'undecided') {
    assert.is(answer.status, 200, JSON.stringify(body));
    assert.is(body.status, 'requested');
    assert.is(body.check?.result, 'unknown');
    return;
  }
  if (rule.breach === 'already_credited') {
    assert.equal([answer.status, body.code], [409, 'tx_already_credited']);
  } else if (rule.breach === 'before_request') {
    assert.equal([answer.status, body.code], [422, 'tx_before_request']);
  } else {
    assert.equal([answer.status, body.code, body.reason], [422, 'tx_not_matching', rule.breach]);
  }
}

test.before(async (context) => {
  context.chain = await startAnvil();
  const { payer, stranger } = keys(context.chain);
  await context.chain.mint(payer.address, 1_000n * AMOUNT);
  await context.chain.mint(stranger.address, 1_000n * AMOUNT);
});

test.after(async ({ chain }) => {
  await chain.stop();
});

test('every crediting rule of the table has exactly one row here that breaks it', () => {
  const broken = ROWS.map((row) => row.breaks).filter((name) => name !== null);
  assert.equal([...broken].sort(), CREDITING_RULES.map((rule) => rule.name).sort());
  assert.is(ROWS.filter((row) => row.breaks === null).length, 1);
});

for (const row of ROWS) {
  const rule = CREDITING_RULES.find((each) => each.name === row.breaks);
  const name = rule
    ? `a transfer that breaks only the ${rule.name} rule is never credited, by any report or by the watcher`
    : 'the transfer that breaks no rule is credited and turns final';
  test(name, async ({ chain }) => {
    const made = await row.make(chain);
    const { server, watcher, payer, payee, payment, txHash } = made;
    try {
      const byPayer = await callJson<PaymentBody>(
        server,
        'POST',
        `/payments/${payment.payment_id}/tx`,
        payer.api_token,
        { tx_hash: txHash },
      );
      const byAnyone = await callJson<PaymentBody>(
        server,
        'POST',
        `/pay/${payment.payment_id}/tx`,
        null,
        { tx_hash: txHash },
      );
      if (!rule) {
        assert.equal([byPayer.status, byPayer.body.status], [200, 'seen']);
        assert.equal([byAnyone.status, byAnyone.body.status], [200, 'seen']);
      } else {
        expectRefusal(rule, byPayer);
        expectRefusal(rule, byAnyone);
      }
      await bury(chain, watcher);
      const after = await getPayment(server, payer, payment.payment_id);
      const received = (await reputationOf(server, payee)).counts.payments_received;
      if (!rule) {
        assert.equal([after.body.status, after.body.tx_hash], ['final', txHash]);
        assert.is(received, 1);
      } else {
        assert.equal([after.body.status, after.body.tx_hash], ['requested', null]);
        assert.is(after.body.evidence, null);
        assert.is(received, made.finalElsewhere);
      }
    } finally {
      await watcher.stop();
      await server.close();
    }
  });
}

test('/pay/protocol states every crediting rule as the table words it', async ({ chain }) => {
  const server = await startTestServer({ ...chainConfig(chain), chainPollMs: 0 });
  try {
    const text = await (await server.get('/pay/protocol')).text();
    for (const rule of CREDITING_RULES) assert.ok(text.includes(rule.says), rule.name);
    assert.ok(text.includes('Only a transfer made after the payment was requested counts.'));
  } finally {
    await server.close();
  }
});

test.run();
