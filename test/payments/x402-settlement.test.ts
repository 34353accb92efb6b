import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Address } from 'viem';
import type { HDAccount } from 'viem/accounts';
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import {
  agreedPair,
  chainConfig,
  getPayment,
  requestPayment,
  setPayout,
} from '../helpers/payments-core.ts';
import { onTestsEnd } from '../helpers/resources.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';
import {
  startX402Facilitator,
  submitAuthorization,
  x402Fetch,
  type ShownAuthorization,
} from '../helpers/x402.ts';

/**
 * x402 in one call (issue 37): an x402 client (`@x402/fetch` with `@x402/evm`, a viem account on
 * anvil) pays a requested payment with one `fetch` of its `pay_url`. The service checks the
 * signed EIP-3009 authorization against the payment and either hands it to a facilitator (here
 * the x402 project's own facilitator code, `x402Facilitator` with `@x402/evm`'s exact scheme,
 * behind a small HTTP server standing in for a third-party service) or keeps it for the payee
 * to submit. The money moves straight from payer to `pay_to` on-chain; the payment is credited
 * only when the service sees that transfer. Every forged or misdirected authorization is
 * refused with the rule it broke, and nothing of it is kept.
 */

interface Context {
  chain: TestChain;
  /** No facilitator: the payee submits. */
  server: TestServer;
  /** With the facilitator below. */
  facilitated: TestServer;
  facilitator: { url: string; settled: () => number };
  /** With a stand-in facilitator that says what `stub.mode` says. */
  stubbed: TestServer;
  stub: { mode: 'refuse' | 'fail_settle' | 'garbage' };
}
const test = suite<Context>('x402 in one call: a signed payment pays a requested payment');

test.before(async (context) => {
  context.chain = await startAnvil();
  context.server = await startTestServer(chainConfig(context.chain));
  context.facilitator = await startX402Facilitator(context.chain, context.chain.accounts[9]!);
  context.facilitated = await startTestServer({
    ...chainConfig(context.chain),
    x402FacilitatorUrl: context.facilitator.url,
  });
  context.stub = { mode: 'refuse' };
  context.stubbed = await startTestServer({
    ...chainConfig(context.chain),
    x402FacilitatorUrl: await startStub(context.stub),
  });
});
test.after(async ({ server, facilitated, stubbed }) => {
  await server.close();
  await facilitated.close();
  await stubbed.close();
});

/** A facilitator that refuses to verify, fails to settle, or answers what x402 never does. */
async function startStub(stub: Context['stub']): Promise<string> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (stub.mode === 'garbage') return res.end('<html>502 Bad Gateway</html>');
      if (req.url === '/verify') {
        return res.end(
          JSON.stringify(
            stub.mode === 'refuse'
              ? { isValid: false, invalidReason: 'insufficient_funds' }
              : { isValid: true },
          ),
        );
      }
      res.end(
        JSON.stringify({ success: false, errorReason: 'transaction_failed', transaction: '' }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestsEnd(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A requested payment of a fresh agreed deal on `server` (its payee paid at dev account 4). */
async function newPayment(server: TestServer, chain: TestChain, amount: string) {
  const { payee, payer, dealId } = await agreedPair(server);
  assert.is((await setPayout(server, payee, chain.accounts[4]!)).status, 200);
  const asked = await requestPayment(server, payee, {
    deal_id: dealId,
    payer_agent_id: payer.agent_id,
    amount_usdc: amount,
    memo: `x402 ${randomBytes(4).toString('hex')}`,
  });
  assert.is(asked.status, 201, JSON.stringify(asked.body));
  return { payment: asked.body, payee, payer };
}

/** `fetch` paying as `account` with x402's own client, recording what it sent. */
function x402Client(chain: TestChain, account: HDAccount) {
  const sent: Request[] = [];
  const recording = (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    sent.push(request.clone());
    return fetch(request);
  };
  return { pay: x402Fetch(chain, account, recording as typeof fetch), sent };
}

interface Authorized {
  settlement: string;
  authorization: ShownAuthorization;
}

async function changesOf(server: TestServer, agent: Agent) {
  const answer = await fetch(server.url('/changes'), {
    headers: { authorization: `Bearer ${agent.api_token}` },
  });
  return ((await answer.json()) as { changes: { type: string; data: unknown }[] }).changes;
}

test('with no facilitator: one signed retry answers 202, the payee submits the authorization it was given, and the same signature then answers 200 with PAYMENT-RESPONSE', async ({
  server,
  chain,
}) => {
  const { payment, payee } = await newPayment(server, chain, '2.50');
  const payer = chain.accounts[6]!;
  await chain.mint(payer.address, 2_500_000n);
  const { pay, sent } = x402Client(chain, payer);
  const answer = await pay(server.url(`/pay/${payment.payment_id}?x402=1`));
  assert.is(answer.status, 202, await answer.clone().text());
  const pending = (await answer.json()) as { status: string; settlement: string };
  assert.equal([pending.status, pending.settlement], ['requested', 'payee']);
  assert.is(sent.length, 2, 'the first request and the one signed retry');
  assert.is(await chain.balanceOf(payment.pay_to as Address), 0n, 'nothing moved yet');

  // The payee is told, with everything the token needs.
  const told = (await changesOf(server, payee)).find((c) => c.type === 'payment.authorized');
  const { authorization, settlement } = told?.data as Authorized;
  assert.is(settlement, 'payee');
  assert.equal(
    [authorization.from, authorization.to],
    [payer.address.toLowerCase(), payment.pay_to.toLowerCase()],
  );
  const shown = await getPayment(server, payee, payment.payment_id);
  assert.equal(
    (shown.body as unknown as { authorization: Authorized['authorization'] }).authorization.nonce,
    authorization.nonce,
  );

  // The payee submits it and pays the gas: the money moves from the payer to pay_to.
  const hash = await submitAuthorization(chain, chain.accounts[4]!, authorization);
  assert.is(await chain.balanceOf(payment.pay_to as Address), 2_500_000n);
  const reported = await fetch(server.url(`/pay/${payment.payment_id}/tx`), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tx_hash: hash }),
  });
  assert.is(((await reported.json()) as { status: string }).status, 'seen');

  // The client's same signed retry now says it is paid, with x402's SettlementResponse.
  const again = await fetch(server.url(`/pay/${payment.payment_id}`), {
    headers: { 'payment-signature': sent[1]!.headers.get('payment-signature')! },
  });
  assert.is(again.status, 200, await again.clone().text());
  const settled = JSON.parse(
    Buffer.from(again.headers.get('payment-response')!, 'base64').toString('utf8'),
  ) as Record<string, unknown>;
  assert.equal(settled, {
    success: true,
    transaction: hash,
    network: `eip155:${chain.chainId}`,
    payer: payer.address.toLowerCase(),
  });

  // Another signed payment for the paid payment is neither used nor kept.
  const late = await fetch(server.url(`/pay/${payment.payment_id}`), {
    headers: { 'payment-signature': 'e30=' },
  });
  assert.is(late.status, 409);
  assert.is(((await late.json()) as { code: string }).code, 'payment_not_payable');
});

test("with a facilitator: the one call settles through x402's own facilitator code and answers 200 with PAYMENT-RESPONSE once the service saw the transfer", async ({
  facilitated,
  facilitator,
  chain,
}) => {
  const { payment, payee } = await newPayment(facilitated, chain, '4.00');
  const payer = chain.accounts[7]!;
  await chain.mint(payer.address, 4_000_000n);
  const { pay } = x402Client(chain, payer);
  const before = facilitator.settled();
  const answer = await pay(facilitated.url(`/pay/${payment.payment_id}?x402=1`));
  assert.is(answer.status, 200, await answer.clone().text());
  assert.is(facilitator.settled(), before + 1);
  const settled = JSON.parse(
    Buffer.from(answer.headers.get('payment-response')!, 'base64').toString('utf8'),
  ) as { success: boolean; transaction: string };
  assert.is(settled.success, true);
  assert.is(await chain.balanceOf(payment.pay_to as Address), 4_000_000n);
  const shown = (await getPayment(facilitated, payee, payment.payment_id)).body as unknown as {
    status: string;
    tx_hash: string;
    authorization: { settlement: string; settled_tx_hash: string };
  };
  assert.is(shown.status, 'seen');
  assert.is(shown.tx_hash, settled.transaction);
  assert.equal(
    [shown.authorization.settlement, shown.authorization.settled_tx_hash],
    ['facilitator', settled.transaction],
  );
});

test('a facilitator that refuses to verify: 402 facilitator_refused with its reason, and nothing is kept', async ({
  stubbed,
  stub,
  chain,
}) => {
  stub.mode = 'refuse';
  const { payment, payee } = await newPayment(stubbed, chain, '1.00');
  const { pay } = x402Client(chain, chain.accounts[6]!);
  const answer = await pay(stubbed.url(`/pay/${payment.payment_id}?x402=1`)).catch(
    (error: unknown) => error as Error,
  );
  // x402's client gives up after its one signed retry was refused again.
  const refusal =
    answer instanceof Response
      ? ((await answer.json()) as { error: string }).error
      : String((answer as Error).message);
  assert.match(refusal, /facilitator_refused|insufficient_funds|Payment already attempted/);
  const shown = (await getPayment(stubbed, payee, payment.payment_id)).body as unknown as {
    authorization: unknown;
  };
  assert.is(shown.authorization, null);
});

for (const mode of ['fail_settle', 'garbage'] as const) {
  test(`a facilitator that ${mode === 'fail_settle' ? 'fails to settle' : 'answers no x402 at all'}: the checked authorization is kept for the payee (202, settlement payee, settle_error says why)`, async ({
    stubbed,
    stub,
    chain,
  }) => {
    stub.mode = mode;
    const { payment, payee } = await newPayment(stubbed, chain, '1.00');
    const { pay } = x402Client(chain, chain.accounts[6]!);
    const answer = await pay(stubbed.url(`/pay/${payment.payment_id}?x402=1`));
    assert.is(answer.status, 202, await answer.clone().text());
    const pending = (await answer.json()) as { settlement: string; settle_error: string };
    assert.is(pending.settlement, 'payee');
    assert.match(
      pending.settle_error,
      mode === 'fail_settle' ? /transaction_failed/ : /not a JSON object|JSON/,
    );
    const told = (await changesOf(stubbed, payee)).find((c) => c.type === 'payment.authorized');
    assert.is((told?.data as Authorized | undefined)?.settlement, 'payee');
  });
}

test.run();
