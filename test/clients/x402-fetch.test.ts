import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ExactEvmScheme } from '@x402/evm';
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAbi, type Address, type Hex } from 'viem';
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import { agreedPair, chainConfig, requestPayment, setPayout } from '../helpers/payments-core.ts';
import { onTestsEnd } from '../helpers/resources.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * `pay` as x402's own client takes it: `@x402/fetch` wrapping fetch, with `@x402/evm`'s exact
 * scheme signing for a payer key on the local anvil chain. The client must accept the 402's
 * requirements (its parser) and sign an EIP-3009 authorization over the token's EIP-712 domain
 * (its signer refuses requirements without `extra.name` and `extra.version`); the signature
 * must be one the token contract takes, so the payer can settle it and report the transfer.
 */

interface Context {
  chain: TestChain;
  /** A JSON-RPC pass-through to anvil that counts the calls the service makes. */
  rpc: CountingRpc;
  server: TestServer;
}
const test = suite<Context>('x402 clients: @x402/fetch with @x402/evm pays a 402');

const TOKEN_ABI = parseAbi([
  'function name() view returns (string)',
  'function version() view returns (string)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
]);

interface CountingRpc {
  url: string;
  /** `eth_call`s to `name()` or `version()` received so far. */
  domainReads(): number;
}

/** `name()` and `version()`'s selectors, as an eth_call's data starts. */
const DOMAIN_SELECTORS = ['0x06fdde03', '0x54fd4d50'];

async function countingRpc(target: string): Promise<CountingRpc> {
  let reads = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const calls = ([] as { method?: string; params?: { data?: string }[] }[]).concat(
        JSON.parse(body) as never,
      );
      for (const call of calls) {
        const data = call.params?.[0]?.data ?? '';
        if (call.method === 'eth_call' && DOMAIN_SELECTORS.some((s) => data.startsWith(s))) {
          reads += 1;
        }
      }
      void fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        .then(async (answer) => {
          res.setHeader('content-type', 'application/json');
          res.end(await answer.text());
        })
        .catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestsEnd(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, domainReads: () => reads };
}

test.before(async (context) => {
  context.chain = await startAnvil();
  context.rpc = await countingRpc(context.chain.url);
  context.server = await startTestServer({
    ...chainConfig(context.chain),
    chainRpcUrls: [context.rpc.url],
  });
});
test.after(async ({ server }) => {
  await server.close();
});

/** A requested payment of a fresh agreed deal (its payee paid at dev account 4). */
async function newPayment({ server, chain }: Context, amount: string) {
  const { payee, payer, dealId } = await agreedPair(server);
  assert.is((await setPayout(server, payee, chain.accounts[4]!)).status, 200);
  const asked = await requestPayment(server, payee, {
    deal_id: dealId,
    payer_agent_id: payer.agent_id,
    amount_usdc: amount,
    memo: 'x402',
  });
  assert.is(asked.status, 201, JSON.stringify(asked.body));
  return asked.body;
}

/** x402 v2's PaymentPayload for the exact scheme on EVM, as PAYMENT-SIGNATURE carries it. */
interface ExactPayload {
  x402Version: number;
  accepted: { extra: { name?: string; version?: string } };
  payload: {
    authorization: {
      from: Address;
      to: Address;
      value: string;
      validAfter: string;
      validBefore: string;
      nonce: Hex;
    };
    signature: Hex;
  };
}

test("@x402/fetch accepts the 402, signs with the token's EIP-712 domain read from the chain, and that signature moves the money when submitted", async (context) => {
  const { server, chain } = context;
  const payment = await newPayment(context, '3.25');
  const payer = chain.accounts[6]!;
  await chain.mint(payer.address, 3_250_000n);

  const sent: Request[] = [];
  const recording = (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    sent.push(request.clone());
    return fetch(request);
  };
  const pay = wrapFetchWithPaymentFromConfig(recording, {
    schemes: [{ network: `eip155:${chain.chainId}`, client: new ExactEvmScheme(payer) }],
    // The test token is not one of x402's known assets: a payer opts in to it, with a cap.
    spendControls: {
      allowedAssets: [
        { network: `eip155:${chain.chainId}`, asset: chain.usdc, maxAmountPerPayment: '5000000' },
      ],
    },
  });
  const answer = await pay(server.url(`/pay/${payment.payment_id}?x402=1`));

  // With no facilitator configured the signed retry is kept for the payee to submit: 202.
  assert.is(answer.status, 202, await answer.clone().text());
  assert.is(((await answer.json()) as { settlement: string }).settlement, 'payee');
  assert.is(sent.length, 2, 'the first request and the signed retry');
  const header = sent[1]!.headers.get('payment-signature');
  assert.ok(header, 'the retry carries PAYMENT-SIGNATURE');
  const signed = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as ExactPayload;
  assert.is(signed.x402Version, 2);
  const [name, version] = await Promise.all([
    chain.publicClient.readContract({ address: chain.usdc, abi: TOKEN_ABI, functionName: 'name' }),
    chain.publicClient.readContract({
      address: chain.usdc,
      abi: TOKEN_ABI,
      functionName: 'version',
    }),
  ]);
  assert.equal(signed.accepted.extra, { ...signed.accepted.extra, name, version });
  const { authorization, signature } = signed.payload;
  assert.equal(
    [authorization.from, authorization.to.toLowerCase(), authorization.value],
    [payer.address, payment.pay_to.toLowerCase(), '3250000'],
  );

  // Anyone may submit it (the payee is told to); here the payer does, as a facilitator would: the token checks the
  // signature against its domain, so this transfer happens only if name and version were right.
  const hash = await chain.wallet(payer).writeContract({
    address: chain.usdc,
    abi: TOKEN_ABI,
    functionName: 'transferWithAuthorization',
    args: [
      authorization.from,
      authorization.to,
      BigInt(authorization.value),
      BigInt(authorization.validAfter),
      BigInt(authorization.validBefore),
      authorization.nonce,
      signature,
    ],
  });
  const receipt = await chain.publicClient.waitForTransactionReceipt({ hash });
  assert.is(receipt.status, 'success');
  assert.is(await chain.balanceOf(payment.pay_to as Address), 3_250_000n);

  const reported = await fetch(server.url(`/pay/${payment.payment_id}/tx`), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tx_hash: hash }),
  });
  assert.is(reported.status, 200, await reported.clone().text());
  assert.is(((await reported.json()) as { status: string }).status, 'seen');
});

test("the token's name and version are read from the chain once, then kept", async (context) => {
  const { server, rpc } = context;
  const before = rpc.domainReads();
  for (const amount of ['1.00', '2.00']) {
    const payment = await newPayment(context, amount);
    const answer = await fetch(server.url(`/pay/${payment.payment_id}?x402=1`));
    assert.is(answer.status, 402);
    const required = (await answer.json()) as { accepts: { extra: Record<string, unknown> }[] };
    assert.is(required.accepts[0]?.extra.name, 'USD Coin');
    assert.is(required.accepts[0]?.extra.version, '2');
  }
  // The suite's first test read them (name and version, once each); nothing since.
  assert.is(rpc.domainReads() - before, 0);
  assert.is(rpc.domainReads(), 2);
});

test.run();
