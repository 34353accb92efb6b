import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { getAddress, parseAbi, type Abi, type Address, type Hex } from 'viem';
import { chainAccess, type ChainAccess } from '../../actors/payments/chain/clients.ts';
import { depositAddress } from '../../actors/payments/chain/deposit-address.ts';
import { verifyTransfer, type Verification } from '../../actors/payments/chain/verify.ts';
import artifacts from '../../actors/payments/contracts/artifacts.json' with { type: 'json' };
import type { PaymentRow } from '../../storage/payments/payments.ts';
import { startAnvil, type TestChain } from '../helpers/chain.ts';
import { startLiarRpc } from '../helpers/liar-rpc.ts';

/**
 * verifyTransfer against a real chain: what credits a payment (a Transfer of the configured
 * USDC to the deposit address, or to the payee from the payer's payout address, of at least the
 * amount) and what never does, and RPCs that hang, lie or disagree, which make it "unknown".
 */
const test = suite<{ chain: TestChain; access: ChainAccess; otherToken: Address }>(
  'verifying a reported transfer on a local chain',
);

const USDC = parseAbi(['function transfer(address to, uint256 value) returns (bool)']);
const AMOUNT = 12_500_000n;

let next = 0;
const newId = () => `00000000-0000-4000-8000-${String(++next).padStart(12, '0')}`;

const roles = (chain: TestChain) => {
  const [, payer, payee, stranger] = chain.accounts;
  if (!payer || !payee || !stranger) throw new Error('anvil has too few accounts');
  return { payer, payee, stranger };
};

/** A requested payment as storage would hand it (verification reads no database). */
function payment(chain: TestChain, overrides: Partial<PaymentRow> = {}): PaymentRow {
  const paymentId = overrides.paymentId ?? newId();
  const payee = roles(chain).payee.address;
  return {
    paymentId,
    dealId: newId(),
    workspaceId: newId(),
    payerAgentId: newId(),
    payeeAgentId: newId(),
    memo: 'invoice',
    amountUnits: AMOUNT,
    payeeAddress: payee,
    depositAddress: depositAddress({ factory: chain.factory, token: chain.usdc, payee, paymentId }),
    depositSalt: null,
    chainId: chain.chainId,
    tokenAddress: chain.usdc,
    status: 'requested',
    machine: null,
    version: 1,
    createdAt: new Date(),
    expiresAt: new Date(Date.now() + 3_600_000),
    reportedTxHash: null,
    finalAt: null,
    // Requested at the genesis block: every transfer of these tests is made after it.
    requestedAtBlock: 0,
    ...overrides,
  };
}

const accessTo = (chain: TestChain, urls: string[], rpcTimeoutMs = 5000): ChainAccess => {
  const access = chainAccess({
    rpcUrls: urls,
    chainId: chain.chainId,
    usdc: chain.usdc,
    confirmations: 2,
    pollMs: 50,
    expiryMs: 3_600_000,
    factory: chain.factory,
    rpcTimeoutMs,
  });
  if (!access) throw new Error('no access');
  return access;
};

const verify = (
  access: ChainAccess,
  row: PaymentRow,
  hash: string,
  payerAddress: string | null = null,
): Promise<Verification> =>
  verifyTransfer(access, row, hash, { payerAddress, reporter: 'payer', at: 1 });

test.before(async (context) => {
  context.chain = await startAnvil();
  context.access = accessTo(context.chain, [context.chain.url]);
  const deployer = context.chain.accounts[0];
  if (!deployer) throw new Error('no deployer');
  const hash = await context.chain.wallet(deployer).deployContract({
    abi: artifacts.TestUsdc.abi as Abi,
    bytecode: artifacts.TestUsdc.bytecode as Hex,
  });
  const receipt = await context.chain.publicClient.waitForTransactionReceipt({ hash });
  if (!receipt.contractAddress) throw new Error('no second token');
  context.otherToken = getAddress(receipt.contractAddress);
  const { payer, stranger } = roles(context.chain);
  await context.chain.mint(payer.address, 1_000n * AMOUNT);
  await context.chain.mint(stranger.address, 1_000n * AMOUNT);
});

test.after(async ({ chain }) => {
  await chain.stop();
});

test('a transfer to the deposit address from any wallet matches, with its evidence', async ({
  chain,
  access,
}) => {
  const row = payment(chain);
  const { stranger } = roles(chain);
  const sent = await chain.transfer(stranger, row.depositAddress as Address, AMOUNT);
  await chain.mine(2);
  const result = await verify(access, row, sent.hash);
  if (result.kind !== 'match') return assert.unreachable(JSON.stringify(result));
  const block = await chain.publicClient.getBlock({ blockNumber: sent.blockNumber });
  assert.equal(result.evidence, {
    tx_hash: sent.hash,
    log_index: result.logIndex,
    block_number: Number(sent.blockNumber),
    block_hash: block.hash,
    from: stranger.address,
    to: row.depositAddress,
    amount_units: AMOUNT.toString(),
    confirmations: 3,
    checked_at: 1,
    rpc_answers: [{ rpc: `${new URL(chain.url).host}#1`, block_hash: block.hash }],
  });
});

test('the hash is matched whatever its case', async ({ chain, access }) => {
  const row = payment(chain);
  const sent = await chain.transfer(roles(chain).payer, row.depositAddress as Address, AMOUNT);
  const result = await verify(access, row, sent.hash.toUpperCase().replace('0X', '0x'));
  assert.is(result.kind, 'match');
  if (result.kind === 'match') assert.is(result.evidence.confirmations, 1);
});

test('a transfer to the payee address matches only from the payer’s payout address', async ({
  chain,
  access,
}) => {
  const { payer, payee, stranger } = roles(chain);
  const row = payment(chain);
  const own = await chain.transfer(payer, payee.address, AMOUNT);
  assert.is((await verify(access, row, own.hash, payer.address)).kind, 'match');
  const strangers = await chain.transfer(stranger, payee.address, AMOUNT);
  assert.equal(await verify(access, row, strangers.hash, payer.address), {
    kind: 'no_match',
    reason: 'wrong_sender',
  });
  assert.equal(await verify(access, row, own.hash, null), {
    kind: 'no_match',
    reason: 'wrong_sender',
  });
});

test('more than the amount matches; less is a short amount', async ({ chain, access }) => {
  const { payer } = roles(chain);
  const row = payment(chain);
  const more = await chain.transfer(payer, row.depositAddress as Address, AMOUNT + 1n);
  assert.is((await verify(access, row, more.hash)).kind, 'match');
  const short = await chain.transfer(payer, row.depositAddress as Address, AMOUNT - 1n);
  assert.equal(await verify(access, row, short.hash), { kind: 'no_match', reason: 'short_amount' });
});

test('a transfer to another address is the wrong recipient', async ({ chain, access }) => {
  const { payer, stranger } = roles(chain);
  const sent = await chain.transfer(payer, stranger.address, AMOUNT);
  assert.equal(await verify(access, payment(chain), sent.hash, payer.address), {
    kind: 'no_match',
    reason: 'wrong_recipient',
  });
});

test('the same Transfer event from another token contract is never credited', async ({
  chain,
  access,
  otherToken,
}) => {
  const { payer } = roles(chain);
  const row = payment(chain);
  const wallet = chain.wallet(payer);
  const mint = parseAbi(['function mint(address to, uint256 value)']);
  await chain.publicClient.waitForTransactionReceipt({
    hash: await wallet.writeContract({
      address: otherToken,
      abi: mint,
      functionName: 'mint',
      args: [payer.address, AMOUNT],
    }),
  });
  const hash = await wallet.writeContract({
    address: otherToken,
    abi: USDC,
    functionName: 'transfer',
    args: [row.depositAddress as Address, AMOUNT],
  });
  await chain.publicClient.waitForTransactionReceipt({ hash });
  assert.equal(await verify(access, row, hash), { kind: 'no_match', reason: 'wrong_token' });
});

test('a transaction without a transfer, and a reverted one, never match', async ({
  chain,
  access,
}) => {
  const { payer } = roles(chain);
  const row = payment(chain);
  const wallet = chain.wallet(payer);
  const plain = await wallet.sendTransaction({ to: row.depositAddress as Address, value: 1n });
  await chain.publicClient.waitForTransactionReceipt({ hash: plain });
  assert.equal(await verify(access, row, plain), { kind: 'no_match', reason: 'not_a_transfer' });
  // More than the payer holds, sent with its own gas so that no estimate refuses it first.
  const reverted = await wallet.writeContract({
    address: chain.usdc,
    abi: USDC,
    functionName: 'transfer',
    args: [row.depositAddress as Address, 10n ** 30n],
    gas: 100_000n,
  });
  await chain.publicClient.waitForTransactionReceipt({ hash: reverted });
  assert.equal(await verify(access, row, reverted), { kind: 'no_match', reason: 'reverted' });
});

test('a transaction no RPC knows yet is pending, not failed', async ({ chain, access }) => {
  assert.equal(await verify(access, payment(chain), `0x${'ab'.repeat(32)}`), { kind: 'pending' });
});

test('an RPC that never answers makes the check unknown, in about its timeout', async ({
  chain,
}) => {
  const silent = await startLiarRpc('silent');
  const access = accessTo(chain, [chain.url, silent.url], 300);
  const row = payment(chain);
  const sent = await chain.transfer(roles(chain).payer, row.depositAddress as Address, AMOUNT);
  const started = Date.now();
  const result = await verify(access, row, sent.hash);
  assert.is(result.kind, 'unknown');
  if (result.kind === 'unknown') assert.match(result.reason, /#2: .*(timed out|took too long)/i);
  assert.ok(Date.now() - started < 3000, 'bounded by the timeout and one retry');
  await silent.stop();
});

test('an RPC that answers nonsense makes the check unknown', async ({ chain }) => {
  const liar = await startLiarRpc('nonsense');
  const row = payment(chain);
  const sent = await chain.transfer(roles(chain).payer, row.depositAddress as Address, AMOUNT);
  for (const urls of [
    [chain.url, liar.url],
    [liar.url, chain.url],
  ]) {
    const result = await verify(accessTo(chain, urls), row, sent.hash);
    assert.is(result.kind, 'unknown', JSON.stringify(result));
  }
  assert.ok((liar.calls.get('eth_getTransactionReceipt') ?? 0) >= 2);
  await liar.stop();
});

test('two RPCs on different chains disagree: unknown, never a match', async ({ chain }) => {
  const other = await startAnvil();
  const row = payment(chain);
  const sent = await chain.transfer(roles(chain).payer, row.depositAddress as Address, AMOUNT);
  const result = await verify(accessTo(chain, [chain.url, other.url]), row, sent.hash);
  assert.is(result.kind, 'unknown');
  await other.stop();
});

test('a payment asked on another token than the service follows is never matched', async ({
  chain,
  access,
  otherToken,
}) => {
  const row = payment(chain, { tokenAddress: otherToken });
  const sent = await chain.transfer(roles(chain).payer, row.depositAddress as Address, AMOUNT);
  assert.is((await verify(access, row, sent.hash)).kind, 'unknown');
});

test.run();
