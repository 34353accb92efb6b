import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  domainSeparator,
  parseAbi,
  parseEventLogs,
  parseSignature,
  toHex,
  type Address,
  type Hash,
  type Hex,
} from 'viem';
import type { HDAccount } from 'viem/accounts';
import { startAnvil, type TestChain } from '../helpers/chain.ts';

/**
 * TestUsdc signs like real USDC (Circle's FiatTokenV2_2), so payers' tools work on the local
 * chain unchanged: the EIP-712 domain of Base's USDC (name "USD Coin", version "2", the chain id,
 * the token's address) and EIP-3009 transferWithAuthorization, checked on a real anvil with
 * signatures made by viem's signTypedData as a wallet makes them.
 */
const test = suite<{ chain: TestChain }>('the test USDC takes signed authorizations as USDC does');

const USDC = parseAbi([
  'function name() view returns (string)',
  'function version() view returns (string)',
  'function DOMAIN_SEPARATOR() view returns (bytes32)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
  'function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)',
  'function nonces(address owner) view returns (uint256)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
]);

/** EIP-3009's type, as x402 clients and wallets write it for USDC. */
const AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;

const AMOUNT = 7_250_000n;

interface Authorization {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

/** Real USDC's EIP-712 domain, for the token at `chain.usdc`. */
const usdcDomain = (chain: TestChain) =>
  ({
    name: 'USD Coin',
    version: '2',
    chainId: chain.chainId,
    verifyingContract: chain.usdc,
  }) as const;

let nonces = 0;
/** An authorization from `from` to `to`, valid for the next hour, with a nonce never used. */
async function authorization(chain: TestChain, from: HDAccount, to: Address) {
  const now = (await chain.publicClient.getBlock()).timestamp;
  return {
    from: from.address,
    to,
    value: AMOUNT,
    validAfter: 0n,
    validBefore: now + 3600n,
    nonce: toHex(++nonces, { size: 32 }),
  } satisfies Authorization;
}

const sign = (chain: TestChain, signer: HDAccount, message: Authorization) =>
  signer.signTypedData({
    domain: usdcDomain(chain),
    types: AUTHORIZATION_TYPES,
    primaryType: 'TransferWithAuthorization',
    message,
  });

/** Sends the authorization (v, r, s form) from `relayer`, who pays the gas; its hash once mined. */
async function submit(
  chain: TestChain,
  relayer: HDAccount,
  message: Authorization,
  signature: Hex,
): Promise<Hash> {
  const { v, r, s } = parseSignature(signature);
  const hash = await chain.wallet(relayer).writeContract({
    address: chain.usdc,
    abi: USDC,
    functionName: 'transferWithAuthorization',
    args: [
      message.from,
      message.to,
      message.value,
      message.validAfter,
      message.validBefore,
      message.nonce,
      Number(v),
      r,
      s,
    ],
  });
  const receipt = await chain.publicClient.waitForTransactionReceipt({ hash });
  assert.is(receipt.status, 'success');
  return hash;
}

/** Runs `attempt`, which must be refused by the token with `reason`. */
async function refused(attempt: () => Promise<unknown>, reason: RegExp) {
  try {
    await attempt();
  } catch (error) {
    assert.match(String(error), reason);
    return;
  }
  assert.unreachable(`the token took it (expected a refusal matching ${reason})`);
}

const roles = (chain: TestChain) => {
  const [, payer, payee, relayer] = chain.accounts;
  if (!payer || !payee || !relayer) throw new Error('anvil has too few accounts');
  return { payer, payee, relayer };
};

test.before(async (context) => {
  context.chain = await startAnvil();
  await context.chain.mint(roles(context.chain).payer.address, 100n * AMOUNT);
});

test.after(async ({ chain }) => {
  await chain.stop();
});

test('its EIP-712 domain is real USDC’s: name "USD Coin", version "2", this chain and this token', async ({
  chain,
}) => {
  const read = <F extends 'name' | 'version' | 'DOMAIN_SEPARATOR'>(functionName: F) =>
    chain.publicClient.readContract({ address: chain.usdc, abi: USDC, functionName });
  assert.is(await read('name'), 'USD Coin');
  assert.is(await read('version'), '2');
  assert.is(await read('DOMAIN_SEPARATOR'), domainSeparator({ domain: usdcDomain(chain) }));
});

test('a transferWithAuthorization signed with signTypedData moves the funds, sent by anyone, and says so in Transfer and AuthorizationUsed', async ({
  chain,
}) => {
  const { payer, payee, relayer } = roles(chain);
  const message = await authorization(chain, payer, payee.address);
  const payerBefore = await chain.balanceOf(payer.address);
  const payeeBefore = await chain.balanceOf(payee.address);

  const hash = await submit(chain, relayer, message, await sign(chain, payer, message));

  assert.is(await chain.balanceOf(payer.address), payerBefore - AMOUNT);
  assert.is(await chain.balanceOf(payee.address), payeeBefore + AMOUNT);
  const receipt = await chain.publicClient.getTransactionReceipt({ hash });
  const [transfer] = parseEventLogs({ abi: USDC, logs: receipt.logs, eventName: 'Transfer' });
  assert.equal(transfer?.args, { from: payer.address, to: payee.address, value: AMOUNT });
  assert.is(transfer?.address, chain.usdc.toLowerCase());
  const [used] = parseEventLogs({ abi: USDC, logs: receipt.logs, eventName: 'AuthorizationUsed' });
  assert.equal(used?.args, { authorizer: payer.address, nonce: message.nonce });
  const state = await chain.publicClient.readContract({
    address: chain.usdc,
    abi: USDC,
    functionName: 'authorizationState',
    args: [payer.address, message.nonce],
  });
  assert.is(state, true);
});

test('the same authorization sent twice moves the funds once: the replay is refused', async ({
  chain,
}) => {
  const { payer, payee, relayer } = roles(chain);
  const message = await authorization(chain, payer, payee.address);
  const signature = await sign(chain, payer, message);
  await submit(chain, relayer, message, signature);
  const payerAfter = await chain.balanceOf(payer.address);

  await refused(
    () => submit(chain, relayer, message, signature),
    /authorization is used or canceled/,
  );
  assert.is(await chain.balanceOf(payer.address), payerAfter);
});

test('an authorization past its validBefore is refused as expired', async ({ chain }) => {
  const { payer, payee, relayer } = roles(chain);
  const now = (await chain.publicClient.getBlock()).timestamp;
  const message = { ...(await authorization(chain, payer, payee.address)), validBefore: now };
  const payerBefore = await chain.balanceOf(payer.address);

  await refused(
    async () => submit(chain, relayer, message, await sign(chain, payer, message)),
    /authorization is expired/,
  );
  assert.is(await chain.balanceOf(payer.address), payerBefore);
});

test('an authorization signed by anyone but `from` is refused: the funds stay', async ({
  chain,
}) => {
  const { payer, payee, relayer } = roles(chain);
  // The payee signs an authorization to take the payer's funds.
  const message = await authorization(chain, payer, payee.address);
  const payerBefore = await chain.balanceOf(payer.address);

  await refused(
    async () => submit(chain, relayer, message, await sign(chain, payee, message)),
    /invalid signature/,
  );
  assert.is(await chain.balanceOf(payer.address), payerBefore);
});

test('the bytes-signature form of transferWithAuthorization takes the same signature', async ({
  chain,
}) => {
  const { payer, payee, relayer } = roles(chain);
  const message = await authorization(chain, payer, payee.address);
  const payeeBefore = await chain.balanceOf(payee.address);
  const hash = await chain.wallet(relayer).writeContract({
    address: chain.usdc,
    abi: USDC,
    functionName: 'transferWithAuthorization',
    args: [
      message.from,
      message.to,
      message.value,
      message.validAfter,
      message.validBefore,
      message.nonce,
      await sign(chain, payer, message),
    ],
  });
  assert.is((await chain.publicClient.waitForTransactionReceipt({ hash })).status, 'success');
  assert.is(await chain.balanceOf(payee.address), payeeBefore + AMOUNT);
});

test('an EIP-2612 permit signed by the owner sets the allowance and uses up its nonce', async ({
  chain,
}) => {
  const { payer, relayer } = roles(chain);
  const nonceOf = (owner: Address) =>
    chain.publicClient.readContract({
      address: chain.usdc,
      abi: USDC,
      functionName: 'nonces',
      args: [owner],
    });
  const nonce = await nonceOf(payer.address);
  const deadline = (await chain.publicClient.getBlock()).timestamp + 3600n;
  const signature = await payer.signTypedData({
    domain: usdcDomain(chain),
    types: {
      Permit: [
        { name: 'owner', type: 'address' },
        { name: 'spender', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'nonce', type: 'uint256' },
        { name: 'deadline', type: 'uint256' },
      ],
    },
    primaryType: 'Permit',
    message: { owner: payer.address, spender: relayer.address, value: AMOUNT, nonce, deadline },
  });
  const { v, r, s } = parseSignature(signature);
  const hash = await chain.wallet(relayer).writeContract({
    address: chain.usdc,
    abi: USDC,
    functionName: 'permit',
    args: [payer.address, relayer.address, AMOUNT, deadline, Number(v), r, s],
  });
  assert.is((await chain.publicClient.waitForTransactionReceipt({ hash })).status, 'success');
  const allowance = await chain.publicClient.readContract({
    address: chain.usdc,
    abi: USDC,
    functionName: 'allowance',
    args: [payer.address, relayer.address],
  });
  assert.is(allowance, AMOUNT);
  assert.is(await nonceOf(payer.address), nonce + 1n);
});

test.run();
