import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  TransactionReceiptNotFoundError,
  getAddress,
  parseAbi,
  parseEventLogs,
  type Address,
} from 'viem';
import { depositAddress, depositSalt } from '../../actors/payments/chain/deposit-address.ts';
import artifacts from '../../actors/payments/contracts/artifacts.json' with { type: 'json' };
import { startAnvil, type TestChain } from '../helpers/chain.ts';

const test = suite<{ chain: TestChain }>('payment contracts on a local chain');

const ERC20 = parseAbi([
  'function name() view returns (string)',
  'function symbol() view returns (string)',
  'function decimals() view returns (uint8)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);
const FACTORY = parseAbi([
  'function addressOf(address token, address payee, bytes32 salt) view returns (address)',
  'event Swept(address indexed forwarder, address indexed token, address indexed payee, bytes32 salt, uint256 amount)',
]);
const FORWARDER = parseAbi([
  'function token() view returns (address)',
  'function payee() view returns (address)',
  'function sweep()',
]);

const PAYMENT_ID = '6f1c2a7e-3b0d-4c55-9a8e-2d4f1b7c9e01';

/** Anvil's dev accounts by role: nobody in a payment is the sweeper. */
const roles = (chain: TestChain) => {
  const [, payer, payee, stranger, , , , , , sweeper] = chain.accounts;
  if (!payer || !payee || !stranger || !sweeper) throw new Error('anvil has too few accounts');
  return { payer, payee, stranger, sweeper };
};

/** A payment id of its own for each test, so deposit addresses never meet across tests. */
let next = 0;
const paymentId = () => `00000000-0000-4000-8000-${String(++next).padStart(12, '0')}`;

test.before(async (context) => {
  context.chain = await startAnvil();
});

test.after(async ({ chain }) => {
  await chain.stop();
});

test('the test chain answers with Base chain id 8453', async ({ chain }) => {
  assert.is(await chain.publicClient.getChainId(), 8453);
  assert.is(chain.chainId, 8453);
});

test('TestUsdc is a 6-decimal token named like USDC whose transfers move balances', async ({
  chain,
}) => {
  const { payer, payee } = roles(chain);
  const read = (functionName: 'name' | 'symbol' | 'decimals') =>
    chain.publicClient.readContract({ address: chain.usdc, abi: ERC20, functionName });
  assert.is(await read('decimals'), 6);
  assert.is(await read('symbol'), 'USDC');
  assert.is(await read('name'), 'USD Coin');

  const payerBefore = await chain.balanceOf(payer.address);
  const payeeBefore = await chain.balanceOf(payee.address);
  await chain.mint(payer.address, 12_500_000n);
  const sent = await chain.transfer(payer, payee.address, 12_500_000n);
  assert.is(await chain.balanceOf(payer.address), payerBefore);
  assert.is(await chain.balanceOf(payee.address), payeeBefore + 12_500_000n);

  const receipt = await chain.publicClient.getTransactionReceipt({ hash: sent.hash });
  const [transfer] = parseEventLogs({ abi: ERC20, logs: receipt.logs, eventName: 'Transfer' });
  assert.is(transfer?.address, chain.usdc.toLowerCase());
  assert.equal(transfer?.args, { from: payer.address, to: payee.address, value: 12_500_000n });
});

test('a transfer of more than the balance is refused by the token', async ({ chain }) => {
  const { stranger, payee } = roles(chain);
  const held = await chain.balanceOf(stranger.address);
  try {
    await chain.transfer(stranger, payee.address, held + 1n);
    assert.unreachable('the transfer went through');
  } catch (error) {
    assert.match(String(error), /balance too low/);
  }
});

test('the deposit address computed off-chain is the factory’s own addressOf', async ({ chain }) => {
  const { payee, stranger } = roles(chain);
  for (const [payeeAddress, id] of [
    [payee.address, PAYMENT_ID],
    [stranger.address, PAYMENT_ID],
    [payee.address, paymentId()],
  ] as [Address, string][]) {
    const onChain = await chain.publicClient.readContract({
      address: chain.factory,
      abi: FACTORY,
      functionName: 'addressOf',
      args: [chain.usdc, payeeAddress, depositSalt(id)],
    });
    const offChain = depositAddress({
      factory: chain.factory,
      token: chain.usdc,
      payee: payeeAddress,
      paymentId: id,
    });
    assert.is(offChain, onChain);
    assert.is(offChain, getAddress(offChain), 'EIP-55');
  }
});

test('each payment, payee and token has its own deposit address; the id’s case does not matter', ({
  chain,
}) => {
  const { payee, stranger } = roles(chain);
  const base = { factory: chain.factory, token: chain.usdc, payee: payee.address };
  const one = depositAddress({ ...base, paymentId: PAYMENT_ID });
  assert.is.not(one, depositAddress({ ...base, paymentId: paymentId() }));
  assert.is.not(one, depositAddress({ ...base, payee: stranger.address, paymentId: PAYMENT_ID }));
  assert.is.not(one, depositAddress({ ...base, token: chain.factory, paymentId: PAYMENT_ID }));
  assert.is(one, depositAddress({ ...base, paymentId: PAYMENT_ID.toUpperCase() }));
  assert.is(depositSalt(PAYMENT_ID), depositSalt(PAYMENT_ID.toUpperCase()));
});

test('a payment to a deposit address is swept by a bystander and arrives at the payee', async ({
  chain,
}) => {
  const { payer, payee, sweeper } = roles(chain);
  const deposit = { token: chain.usdc, payee: payee.address, paymentId: paymentId() };
  const address = depositAddress({ factory: chain.factory, ...deposit });
  assert.is(await chain.publicClient.getCode({ address }), undefined, 'nothing deployed yet');

  await chain.mint(payer.address, 7_250_000n);
  await chain.transfer(payer, address, 7_250_000n);
  assert.is(await chain.balanceOf(address), 7_250_000n);

  const payeeBefore = await chain.balanceOf(payee.address);
  const sweeperBefore = await chain.balanceOf(sweeper.address);
  const swept = await chain.sweep(deposit, sweeper);

  assert.is(await chain.balanceOf(address), 0n);
  assert.is(await chain.balanceOf(payee.address), payeeBefore + 7_250_000n);
  assert.is(await chain.balanceOf(sweeper.address), sweeperBefore);
  const receipt = await chain.publicClient.getTransactionReceipt({ hash: swept.hash });
  assert.is(receipt.from, sweeper.address.toLowerCase());
  const [event] = parseEventLogs({ abi: FACTORY, logs: receipt.logs, eventName: 'Swept' });
  assert.equal(event?.args, {
    forwarder: address,
    token: chain.usdc,
    payee: payee.address,
    salt: depositSalt(deposit.paymentId),
    amount: 7_250_000n,
  });
  const [moved] = parseEventLogs({ abi: ERC20, logs: receipt.logs, eventName: 'Transfer' });
  assert.equal(moved?.args, { from: address, to: payee.address, value: 7_250_000n });
});

test('sweeping an empty deposit address is harmless, and a later payment is swept too', async ({
  chain,
}) => {
  const { payer, payee } = roles(chain);
  const deposit = { token: chain.usdc, payee: payee.address, paymentId: paymentId() };
  const address = depositAddress({ factory: chain.factory, ...deposit });
  const payeeBefore = await chain.balanceOf(payee.address);

  // Before anything was paid (deploys the forwarder), then again once it exists.
  for (let round = 0; round < 2; round++) {
    const swept = await chain.sweep(deposit);
    const receipt = await chain.publicClient.getTransactionReceipt({ hash: swept.hash });
    assert.equal(parseEventLogs({ abi: ERC20, logs: receipt.logs, eventName: 'Transfer' }), []);
    assert.is(await chain.balanceOf(payee.address), payeeBefore);
  }
  assert.ok(await chain.publicClient.getCode({ address }), 'deployed by the first sweep');

  await chain.mint(payer.address, 1n);
  await chain.transfer(payer, address, 1n);
  await chain.sweep(deposit);
  assert.is(await chain.balanceOf(payee.address), payeeBefore + 1n);
});

test('the forwarder can only ever send to the payee it was made for', async ({ chain }) => {
  const { payer, payee, stranger } = roles(chain);
  const deposit = { token: chain.usdc, payee: payee.address, paymentId: paymentId() };
  const address = depositAddress({ factory: chain.factory, ...deposit });
  await chain.sweep(deposit);
  await chain.mint(payer.address, 3_000_000n);
  await chain.transfer(payer, address, 3_000_000n);

  // Its whole surface: token, payee, sweep. No owner, no withdraw, no other destination.
  const functions = (artifacts.Forwarder.abi as { type: string; name?: string }[])
    .filter((item) => item.type === 'function')
    .map((item) => item.name)
    .sort();
  assert.equal(functions, ['payee', 'sweep', 'token']);
  const read = (functionName: 'token' | 'payee') =>
    chain.publicClient.readContract({ address, abi: FORWARDER, functionName });
  assert.is(await read('token'), chain.usdc);
  assert.is(await read('payee'), payee.address);

  // Asking the factory for the same salt with the stranger as payee reaches another address.
  const strangerBefore = await chain.balanceOf(stranger.address);
  const strangers = depositAddress({ factory: chain.factory, ...deposit, payee: stranger.address });
  assert.is.not(strangers, address);
  await chain.sweep({ ...deposit, payee: stranger.address }, stranger);
  assert.is(await chain.balanceOf(address), 3_000_000n);
  assert.is(await chain.balanceOf(stranger.address), strangerBefore);

  // The stranger calling the forwarder itself only sends the balance to the payee.
  const payeeBefore = await chain.balanceOf(payee.address);
  const direct = await chain.wallet(stranger).writeContract({
    address,
    abi: FORWARDER,
    functionName: 'sweep',
  });
  await chain.publicClient.waitForTransactionReceipt({ hash: direct });
  assert.is(await chain.balanceOf(stranger.address), strangerBefore);
  assert.is(await chain.balanceOf(payee.address), payeeBefore + 3_000_000n);
  assert.is(await chain.balanceOf(address), 0n);
});

test('a forwarder refuses ether: there is nothing in it that could send ether on', async ({
  chain,
}) => {
  const { payee, stranger } = roles(chain);
  const deposit = { token: chain.usdc, payee: payee.address, paymentId: paymentId() };
  const address = depositAddress({ factory: chain.factory, ...deposit });
  await chain.sweep(deposit);
  try {
    await chain.wallet(stranger).sendTransaction({ to: address, value: 1n });
    assert.unreachable('the forwarder took ether');
  } catch (error) {
    assert.match(String(error), /execution reverted/);
  }
  assert.is(await chain.publicClient.getBalance({ address }), 0n);
});

test('a reorg made with a snapshot drops a transfer: its receipt disappears', async ({ chain }) => {
  const { payer, payee } = roles(chain);
  await chain.mint(payer.address, 5_000_000n);
  const payeeBefore = await chain.balanceOf(payee.address);
  const snapshot = await chain.snapshot();

  const sent = await chain.transfer(payer, payee.address, 5_000_000n);
  await chain.mine(2);
  const minedBlock = await chain.publicClient.getBlock({ blockNumber: sent.blockNumber });
  assert.ok(await chain.publicClient.getTransactionReceipt({ hash: sent.hash }));
  assert.is(await chain.balanceOf(payee.address), payeeBefore + 5_000_000n);

  await chain.revert(snapshot);
  await chain.mine(3);
  try {
    await chain.publicClient.getTransactionReceipt({ hash: sent.hash });
    assert.unreachable('the receipt survived the reorg');
  } catch (error) {
    assert.instance(error, TransactionReceiptNotFoundError);
  }
  const replaced = await chain.publicClient.getBlock({ blockNumber: sent.blockNumber });
  assert.is.not(replaced.hash, minedBlock.hash);
  assert.is(await chain.balanceOf(payee.address), payeeBefore);
  try {
    await chain.revert(snapshot);
    assert.unreachable('a used snapshot was reverted to again');
  } catch (error) {
    assert.match(String(error), /could not revert/);
  }
});

test.run();
