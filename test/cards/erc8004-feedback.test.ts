import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { HDAccount } from 'viem/accounts';
import { startPaymentWatcher } from '../../actors/payments/chain/watcher.ts';
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import { callTool, connectMcp, toolProblem } from '../helpers/clients.ts';
import { rate } from '../helpers/deals.ts';
import { callJson as call } from '../helpers/http.ts';
import {
  agreedPair,
  chainConfig,
  getPayment,
  requestPayment,
  setPayout,
} from '../helpers/payments-core.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { Agent } from '../helpers/wire-types.ts';

/**
 * Every rating as an ERC-8004 off-chain feedback file (GET /agents/<agent_id>/feedback/
 * <rating_id>.json, get_feedback_file), validated against the schema derived from the ERC
 * (test/fixtures/erc-8004/README.md); a payment-backed one names its chain and transaction.
 */
const test = suite<{ chain: TestChain; server: TestServer }>('ERC-8004 feedback files');

const AMOUNT = 12_500_000n;

const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats.default(ajv);
const validFile = ajv.compile(
  JSON.parse(
    readFileSync(
      new URL('../fixtures/erc-8004/feedback-file.schema.json', import.meta.url),
      'utf8',
    ),
  ),
);

interface FeedbackFile {
  agentRegistry: string;
  agentId: string;
  clientAddress: string;
  createdAt: string;
  value: number;
  valueDecimals: number;
  tag1: string;
  proofOfPayment?: { fromAddress: string; toAddress: string; chainId: string; txHash: string };
  rating_id: string;
  payment_backed: boolean;
  code?: string;
}

test.before(async (context) => {
  context.chain = await startAnvil();
  // The test ticks its own watcher: the service runs none.
  context.server = await startTestServer({ ...chainConfig(context.chain), chainPollMs: 0 });
  const [, payer] = context.chain.accounts;
  if (!payer) throw new Error('too few accounts');
  await context.chain.mint(payer.address, 100n * AMOUNT);
});
test.after(async ({ server, chain }) => {
  await server.close();
  await chain.stop();
});

const fileOf = (server: TestServer, agent: { agent_id: string }, ratingId: string) =>
  call<FeedbackFile>(server, 'GET', `/agents/${agent.agent_id}/feedback/${ratingId}.json`, null);

function assertValid(file: unknown) {
  assert.ok(validFile(file), JSON.stringify(validFile.errors, null, 1));
}

/** `payer` pays `payee` for the deal on the chain until the payment is final. */
async function payUntilFinal(
  server: TestServer,
  chain: TestChain,
  pair: { payee: Agent; payer: Agent; dealId: string },
  keys: { payerKey: HDAccount; payeeKey: HDAccount },
) {
  const asked = await requestPayment(server, pair.payee, {
    deal_id: pair.dealId,
    payer_agent_id: pair.payer.agent_id,
    amount_usdc: '12.50',
    memo: 'whole logo',
  });
  assert.is(asked.status, 201, JSON.stringify(asked.body));
  const id = asked.body.payment_id;
  const sent = await chain.transfer(keys.payerKey, keys.payeeKey.address, AMOUNT);
  const reported = await call<{ status: string }>(
    server,
    'POST',
    `/payments/${id}/tx`,
    pair.payer.api_token,
    { tx_hash: sent.hash },
  );
  assert.is(reported.body.status, 'seen', JSON.stringify(reported.body));
  const watcher = startPaymentWatcher(server.services, () => undefined, { poll: false });
  try {
    await chain.mine(70); // anvil's finalized block is 64 below its head
    for (
      let i = 0;
      i < 10 && (await getPayment(server, pair.payee, id)).body.status !== 'final';
      i += 1
    ) {
      await watcher.tick();
    }
  } finally {
    await watcher.stop();
  }
  assert.is((await getPayment(server, pair.payee, id)).body.status, 'final');
  return sent.hash;
}

test('a payment-backed rating is published as a valid ERC-8004 feedback file whose proofOfPayment names the chain and the transaction', async ({
  server,
  chain,
}) => {
  const pair = await agreedPair(server);
  const [, payerKey, payeeKey] = chain.accounts as HDAccount[];
  if (!payerKey || !payeeKey) throw new Error('too few accounts');
  for (const [agent, key] of [
    [pair.payee, payeeKey],
    [pair.payer, payerKey],
  ] as const) {
    assert.is((await setPayout(server, agent, key)).status, 200);
  }
  const rated = await rate(server, pair.payer, pair.dealId, pair.payee, { score: 4 });
  assert.is(rated.status, 201, JSON.stringify(rated.body));
  const ratingId = rated.body.rating_id;
  const before = await fileOf(server, pair.payee, ratingId);
  assert.is(before.status, 200, JSON.stringify(before.body));
  assertValid(before.body);
  assert.is(before.body.proofOfPayment, undefined, 'not backed before the payment is final');

  const txHash = await payUntilFinal(server, chain, pair, { payerKey, payeeKey });
  const got = await fileOf(server, pair.payee, ratingId);
  assert.is(got.status, 200, JSON.stringify(got.body));
  assertValid(got.body);
  const file = got.body;
  assert.equal(
    {
      proof: {
        ...file.proofOfPayment,
        fromAddress: file.proofOfPayment?.fromAddress.toLowerCase(),
        toAddress: file.proofOfPayment?.toAddress.toLowerCase(),
      },
      backed: file.payment_backed,
      client: file.clientAddress,
      value: [file.tag1, file.value, file.valueDecimals],
      agentId: file.agentId,
    },
    {
      proof: {
        fromAddress: payerKey.address.toLowerCase(),
        toAddress: payeeKey.address.toLowerCase(),
        chainId: String(chain.chainId),
        txHash,
      },
      backed: true,
      client: `eip155:${chain.chainId}:${payerKey.address}`,
      value: ['starred', 80, 0],
      agentId: BigInt(`0x${pair.payee.agent_id.replace(/-/g, '')}`).toString(),
    },
  );
});

test('a rating without payment is a valid file with no proofOfPayment, the same over MCP; a rating of another agent is the 404 of a missing one, a non-UUID id is 400', async ({
  server,
}) => {
  const pair = await agreedPair(server);
  const rated = await rate(server, pair.payee, pair.dealId, pair.payer, { delivered_can: false });
  assert.is(rated.status, 201, JSON.stringify(rated.body));
  const ratingId = rated.body.rating_id;
  const got = await fileOf(server, pair.payer, ratingId);
  assert.is(got.status, 200, JSON.stringify(got.body));
  assertValid(got.body);
  assert.equal(
    [got.body.proofOfPayment, got.body.payment_backed, got.body.tag1, got.body.value],
    [undefined, false, 'delivered', 0],
  );

  const client = await connectMcp(server, pair.payee.api_token, 'erc8004-test');
  try {
    const tool = await callTool(client, 'get_feedback_file', {
      agent_id: pair.payer.agent_id,
      rating_id: ratingId,
    });
    assert.equal(JSON.parse(tool.content[0]?.text ?? ''), got.body);
    const wrong = await callTool(client, 'get_feedback_file', {
      agent_id: pair.payee.agent_id,
      rating_id: ratingId,
    });
    assert.is(toolProblem(wrong).code, 'not_found');
  } finally {
    await client.close();
  }

  // The rating is the payer's: under the payee it does not exist, byte for byte.
  const elsewhere = await server.get(`/agents/${pair.payee.agent_id}/feedback/${ratingId}.json`);
  const missing = await server.get(
    `/agents/${pair.payee.agent_id}/feedback/00000000-0000-4000-8000-000000000000.json`,
  );
  assert.equal([elsewhere.status, missing.status], [404, 404]);
  assert.is(await elsewhere.text(), await missing.text());
  for (const path of [
    `/agents/${pair.payer.agent_id}/feedback/not-a-uuid.json`,
    `/agents/not-a-uuid/feedback/${ratingId}.json`,
  ]) {
    const bad = await call<{ code: string }>(server, 'GET', path, null);
    assert.equal([bad.status, bad.body.code], [400, 'invalid_input'], path);
  }
  const noSuffix = await server.get(`/agents/${pair.payer.agent_id}/feedback/${ratingId}`);
  assert.is(noSuffix.status, 404, 'the file is named with .json');
});

test.run();
