import { randomBytes } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAbi, type Address, type Hex } from 'viem';
import type { HDAccount } from 'viem/accounts';
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import {
  agreedPair,
  chainConfig,
  getPayment,
  requestPayment,
  setPayout,
} from '../helpers/payments-core.ts';
import { callTool, connectMcp } from '../helpers/clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';

/**
 * Signed x402 payments that must not pay (issue 37): each is sent to `pay` as x402's v2
 * PaymentPayload in `PAYMENT-SIGNATURE`, signed with viem as an x402 client signs (EIP-712 over
 * the token's domain), and each is answered 402 with `error` naming the rule it broke, with
 * nothing kept: no authorization on the payment, no `payment.authorized` to the payee.
 */

interface Context {
  chain: TestChain;
  server: TestServer;
  domain: { name: string; version: string };
}
const test = suite<Context>('x402: signed payments that do not pay exactly this payment');

const DOMAIN_ABI = parseAbi([
  'function name() view returns (string)',
  'function version() view returns (string)',
]);

test.before(async (context) => {
  context.chain = await startAnvil();
  context.server = await startTestServer(chainConfig(context.chain));
  const read = (functionName: 'name' | 'version') =>
    context.chain.publicClient.readContract({
      address: context.chain.usdc,
      abi: DOMAIN_ABI,
      functionName,
    });
  context.domain = { name: await read('name'), version: await read('version') };
});
test.after(async ({ server }) => {
  await server.close();
});

interface Payment {
  payment_id: string;
  pay_to: string;
  amount_units: string;
  expires_at: string;
}

async function newPayment({ server, chain }: Context, amount = '1.00') {
  const { payee, payer, dealId } = await agreedPair(server);
  assert.is((await setPayout(server, payee, chain.accounts[4]!)).status, 200);
  const asked = await requestPayment(server, payee, {
    deal_id: dealId,
    payer_agent_id: payer.agent_id,
    amount_usdc: amount,
    memo: `attack ${randomBytes(4).toString('hex')}`,
  });
  assert.is(asked.status, 201, JSON.stringify(asked.body));
  return { payment: asked.body as unknown as Payment, payee };
}

interface Signing {
  /** Who signs (default: the payer account). */
  signer?: HDAccount;
  /** Whose authorization it claims to be (default: the signer). */
  from?: Address;
  to?: string;
  value?: bigint;
  validAfter?: bigint;
  validBefore?: bigint;
  nonce?: Hex;
  /** The token whose EIP-712 domain is signed over (default: the payment's). */
  verifyingContract?: Address;
  /** What the payload says it accepted. */
  network?: string;
  asset?: string;
  scheme?: string;
}

const nowSeconds = () => BigInt(Math.floor(Date.now() / 1000));

/** A PAYMENT-SIGNATURE header as an x402 v2 client makes it, with `change` applied. */
async function signed(
  { chain, domain }: Context,
  payment: Payment,
  change: Signing = {},
): Promise<{ header: string; nonce: Hex }> {
  const signer = change.signer ?? chain.accounts[6]!;
  const authorization = {
    from: change.from ?? signer.address,
    to: (change.to ?? payment.pay_to) as Address,
    value: change.value ?? BigInt(payment.amount_units),
    validAfter: change.validAfter ?? nowSeconds() - 600n,
    validBefore: change.validBefore ?? nowSeconds() + 600n,
    nonce: change.nonce ?? (`0x${randomBytes(32).toString('hex')}` as Hex),
  };
  const signature = await signer.signTypedData({
    domain: {
      ...domain,
      chainId: chain.chainId,
      verifyingContract: change.verifyingContract ?? chain.usdc,
    },
    types: {
      TransferWithAuthorization: [
        { name: 'from', type: 'address' },
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'validAfter', type: 'uint256' },
        { name: 'validBefore', type: 'uint256' },
        { name: 'nonce', type: 'bytes32' },
      ],
    },
    primaryType: 'TransferWithAuthorization',
    message: authorization,
  });
  const payload = {
    x402Version: 2,
    accepted: {
      scheme: change.scheme ?? 'exact',
      network: change.network ?? `eip155:${chain.chainId}`,
      amount: payment.amount_units,
      asset: change.asset ?? chain.usdc,
      payTo: payment.pay_to,
      maxTimeoutSeconds: 600,
      extra: domain,
    },
    payload: {
      signature,
      authorization: {
        ...authorization,
        value: authorization.value.toString(),
        validAfter: authorization.validAfter.toString(),
        validBefore: authorization.validBefore.toString(),
      },
    },
  };
  return {
    header: Buffer.from(JSON.stringify(payload), 'utf8').toString('base64'),
    nonce: authorization.nonce,
  };
}

async function send(server: TestServer, payment: Payment, header: string) {
  const answer = await fetch(server.url(`/pay/${payment.payment_id}`), {
    headers: { 'payment-signature': header },
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
}

/** Nothing of a refused signed payment is kept, and the payee hears nothing of it. */
async function nothingKept(server: TestServer, payee: Agent, payment: Payment) {
  const shown = (await getPayment(server, payee, payment.payment_id)).body as unknown as {
    status: string;
    authorization: unknown;
  };
  assert.equal([shown.status, shown.authorization], ['requested', null]);
  const changes = await fetch(server.url('/changes?limit=500'), {
    headers: { authorization: `Bearer ${payee.api_token}` },
  });
  const told = (
    (await changes.json()) as { changes: { type: string; data: { payment_id?: string } }[] }
  ).changes.filter(
    (change) =>
      change.type === 'payment.authorized' && change.data.payment_id === payment.payment_id,
  );
  assert.equal(told, []);
}

const ATTACKS: {
  name: string;
  rule: string;
  change: (context: Context, payment: Payment) => Signing;
}[] = [
  {
    name: 'money sent to another address than pay_to',
    rule: 'wrong_recipient',
    change: ({ chain }) => ({ to: chain.accounts[8]!.address }),
  },
  {
    name: 'one unit less than the amount',
    rule: 'wrong_amount',
    change: (_, payment) => ({ value: BigInt(payment.amount_units) - 1n }),
  },
  {
    name: 'one unit more than the amount',
    rule: 'wrong_amount',
    change: (_, payment) => ({ value: BigInt(payment.amount_units) + 1n }),
  },
  {
    name: 'an authorization already expired',
    rule: 'expired',
    change: () => ({ validBefore: nowSeconds() - 10n }),
  },
  {
    name: 'an authorization valid only later',
    rule: 'not_yet_valid',
    change: () => ({ validAfter: nowSeconds() + 3600n }),
  },
  {
    name: 'an authorization valid past the payment’s expiry',
    rule: 'outlives_payment',
    change: (_, payment) => ({
      validBefore: BigInt(Math.floor(Date.parse(payment.expires_at) / 1000)) + 3600n,
    }),
  },
  {
    name: 'a signature by someone else than `from`',
    rule: 'invalid_signature',
    change: ({ chain }) => ({ signer: chain.accounts[7]!, from: chain.accounts[6]!.address }),
  },
  {
    name: 'a signature over another token’s domain',
    rule: 'invalid_signature',
    change: ({ chain }) => ({ verifyingContract: chain.accounts[8]!.address }),
  },
  {
    name: 'a token other than the payment’s',
    rule: 'wrong_asset',
    change: ({ chain }) => ({ asset: chain.accounts[8]!.address }),
  },
  {
    name: 'another chain',
    rule: 'wrong_network',
    change: () => ({ network: 'eip155:1' }),
  },
  {
    name: 'another scheme than exact',
    rule: 'unsupported_scheme',
    change: () => ({ scheme: 'upto' }),
  },
];

for (const attack of ATTACKS) {
  test(`${attack.name}: 402 ${attack.rule}, and nothing is kept`, async (context) => {
    const { server } = context;
    const { payment, payee } = await newPayment(context);
    const { header } = await signed(context, payment, attack.change(context, payment));
    const answer = await send(server, payment, header);
    assert.is(answer.status, 402, JSON.stringify(answer.body));
    assert.match(String(answer.body.error), new RegExp(`^${attack.rule}: `));
    await nothingKept(server, payee, payment);
  });
}

test('a header that is not base64 JSON of a PaymentPayload: 402 malformed, nothing kept', async (context) => {
  const { server } = context;
  const { payment, payee } = await newPayment(context);
  for (const header of ['not base64 at all!', Buffer.from('[1,2]').toString('base64')]) {
    const answer = await send(server, payment, header);
    assert.is(answer.status, 402);
    assert.match(String(answer.body.error), /^malformed: /);
  }
  await nothingKept(server, payee, payment);
});

test('another payment’s authorization pays nothing here, and its nonce signed again for this payment is refused', async (context) => {
  const { server } = context;
  const first = await newPayment(context);
  const second = await newPayment(context);
  const taken = await signed(context, first.payment);
  assert.is((await send(server, first.payment, taken.header)).status, 202);

  const replayed = await send(server, second.payment, taken.header);
  assert.is(replayed.status, 402);
  assert.match(String(replayed.body.error), /^wrong_recipient: /);

  const sameNonce = await signed(context, second.payment, { nonce: taken.nonce });
  const reused = await send(server, second.payment, sameNonce.header);
  assert.is(reused.status, 402);
  assert.match(String(reused.body.error), /^nonce_used: /);
  await nothingKept(server, second.payee, second.payment);
});

test('the same signature twice is one authorization; a second one for the same payment is refused while the first is valid', async (context) => {
  const { server } = context;
  const { payment, payee } = await newPayment(context);
  const one = await signed(context, payment);
  assert.is((await send(server, payment, one.header)).status, 202);
  assert.is(
    (await send(server, payment, one.header)).status,
    202,
    'the same again: the same answer',
  );
  const other = await signed(context, payment);
  const answer = await send(server, payment, other.header);
  assert.is(answer.status, 402);
  assert.match(String(answer.body.error), /^already_authorized: /);
  const shown = (await getPayment(server, payee, payment.payment_id)).body as unknown as {
    authorization: { nonce: string };
  };
  assert.is(shown.authorization.nonce, one.nonce);
  const changes = await fetch(server.url('/changes?limit=500'), {
    headers: { authorization: `Bearer ${payee.api_token}` },
  });
  const told = (
    (await changes.json()) as { changes: { type: string; data: { payment_id?: string } }[] }
  ).changes.filter(
    (change) =>
      change.type === 'payment.authorized' && change.data.payment_id === payment.payment_id,
  );
  assert.is(told.length, 1, 'the payee is told once');
});

test('x402 v1 (X-PAYMENT, a network by name) is taken as v2 is; a v1 network name of another chain is refused', async (context) => {
  const { server, chain } = context;
  assert.is(chain.chainId, 8453, 'anvil runs as Base here, whose x402 v1 name is `base`');
  const { payment, payee } = await newPayment(context);
  const v1 = async (network: string) => {
    const { header } = await signed(context, payment);
    const v2 = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as {
      payload: unknown;
    };
    const payload = { x402Version: 1, scheme: 'exact', network, payload: v2.payload };
    const answer = await fetch(server.url(`/pay/${payment.payment_id}`), {
      headers: { 'x-payment': Buffer.from(JSON.stringify(payload)).toString('base64') },
    });
    return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
  };
  const elsewhere = await v1('base-sepolia');
  assert.is(elsewhere.status, 402);
  assert.match(String(elsewhere.body.error), /^wrong_network: /);
  await nothingKept(server, payee, payment);
  assert.is((await v1('base')).status, 202);
});

test('pay_x402: POST with no signed payment answers the 402; the signed payment in the body (as MCP sends it) is taken as the header is', async (context) => {
  const { server } = context;
  const { payment, payee } = await newPayment(context);
  const bare = await fetch(server.url(`/pay/${payment.payment_id}`), { method: 'POST' });
  assert.is(bare.status, 402);
  assert.ok(bare.headers.get('payment-required'), 'the requirements in PAYMENT-REQUIRED');
  const { header } = await signed(context, payment);
  const mcp = await connectMcp(server, undefined, 'x402 over MCP');
  try {
    const taken = await callTool(mcp, 'pay_x402', {
      payment_id: payment.payment_id,
      payment_signature: header,
    });
    assert.not.ok(taken.isError, JSON.stringify(taken));
    assert.is(taken.structuredContent?.settlement, 'payee');
    const again = await callTool(mcp, 'pay_x402', { payment_id: payment.payment_id });
    assert.ok(again.isError, 'without a signed payment: an error result holding the requirements');
    assert.match(again.content[0]!.text, /x402Version/);
  } finally {
    await mcp.close();
  }
  const shown = (await getPayment(server, payee, payment.payment_id)).body as unknown as {
    authorization: { nonce: string } | null;
  };
  assert.ok(shown.authorization, 'kept');
  // The same signed payment by POST with the header: the same authorization, answered alike.
  const posted = await fetch(server.url(`/pay/${payment.payment_id}`), {
    method: 'POST',
    headers: { 'payment-signature': header },
  });
  assert.is(posted.status, 202);
});

test('a payment paid to the payee’s own address takes an authorization only from the payer’s payout address, which alone it credits', async (context) => {
  const { chain } = context;
  const server = await startTestServer({ ...chainConfig(chain), forwarderFactoryAddress: null });
  try {
    const { payee, payer, dealId } = await agreedPair(server);
    assert.is((await setPayout(server, payee, chain.accounts[4]!)).status, 200);
    assert.is((await setPayout(server, payer, chain.accounts[5]!)).status, 200);
    const asked = await requestPayment(server, payee, {
      deal_id: dealId,
      payer_agent_id: payer.agent_id,
      amount_usdc: '1.00',
      memo: 'to the payee address',
    });
    const payment = asked.body as unknown as Payment;
    assert.is(payment.pay_to.toLowerCase(), chain.accounts[4]!.address.toLowerCase());
    const stranger = await signed(context, payment, { signer: chain.accounts[6]! });
    const refused = await send(server, payment, stranger.header);
    assert.is(refused.status, 402);
    assert.match(String(refused.body.error), /^not_payout_address: /);
    await nothingKept(server, payee, payment);
    const own = await signed(context, payment, { signer: chain.accounts[5]! });
    assert.is((await send(server, payment, own.header)).status, 202);
  } finally {
    await server.close();
  }
});

test.run();
