import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { x402Facilitator } from '@x402/core/facilitator';
import { ExactEvmScheme, toFacilitatorEvmSigner } from '@x402/evm';
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from '@x402/evm/exact/facilitator';
import { wrapFetchWithPaymentFromConfig } from '@x402/fetch';
import { parseAbi, publicActions, type Address, type Hash, type Hex } from 'viem';
import type { HDAccount } from 'viem/accounts';
import type { TestChain } from './chain.ts';
import { onTestsEnd } from './resources.ts';

/**
 * x402 as its own project's code does it, for the tests of `pay` with a signed payment: the
 * client (`@x402/fetch` with `@x402/evm`'s exact scheme), the facilitator (`x402Facilitator`
 * with `@x402/evm`'s exact facilitator scheme, behind the x402 HTTP API), and the token call
 * that submits an authorization.
 */

/** EIP-3009's submit, the `bytes signature` form (TestUsdc and USDC v2.2 take it). */
export const TRANSFER_WITH_AUTHORIZATION_ABI = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
]);

/** An authorization as `get_payment` and `payment.authorized` show it. */
export interface ShownAuthorization {
  from: Address;
  to: Address;
  value: string;
  valid_after: string;
  valid_before: string;
  nonce: Hex;
  signature: Hex;
}

/**
 * `fetch` paying as `account` with x402's own client; the test token is not one of x402's
 * known assets, so the payer opts in to it with a cap. `through` is the fetch it wraps.
 */
export function x402Fetch(
  chain: TestChain,
  account: HDAccount,
  through: typeof fetch = fetch,
  maxAmountPerPayment = '50000000',
): typeof fetch {
  return wrapFetchWithPaymentFromConfig(through, {
    schemes: [{ network: `eip155:${chain.chainId}`, client: new ExactEvmScheme(account) }],
    spendControls: {
      allowedAssets: [
        { network: `eip155:${chain.chainId}`, asset: chain.usdc, maxAmountPerPayment },
      ],
    },
  });
}

/**
 * The x402 facilitator API (`POST /verify`, `POST /settle`) over the project's own facilitator
 * code, settling with `account`'s key on `chain`: a stand-in for a third-party service. Counts
 * the settlements it was asked for.
 */
export async function startX402Facilitator(
  chain: TestChain,
  account: HDAccount,
): Promise<{ url: string; settled: () => number }> {
  const signer = toFacilitatorEvmSigner({
    ...chain.wallet(account).extend(publicActions),
    address: account.address,
  } as never);
  const facilitator = new x402Facilitator().register(
    `eip155:${chain.chainId}`,
    new ExactEvmFacilitatorScheme(signer),
  );
  let settled = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          paymentPayload: never;
          paymentRequirements: never;
        };
        const answer =
          req.url === '/verify'
            ? await facilitator.verify(body.paymentPayload, body.paymentRequirements)
            : await facilitator.settle(body.paymentPayload, body.paymentRequirements);
        if (req.url === '/settle') settled += 1;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(answer));
      })().catch((error: unknown) => {
        res.statusCode = 500;
        res.end(JSON.stringify({ error: String(error) }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestsEnd(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, settled: () => settled };
}

/** Submits a kept authorization as `submitter` (who pays the gas); its hash once mined. */
export async function submitAuthorization(
  chain: TestChain,
  submitter: HDAccount,
  authorization: ShownAuthorization,
): Promise<Hash> {
  const hash = await chain.wallet(submitter).writeContract({
    address: chain.usdc,
    abi: TRANSFER_WITH_AUTHORIZATION_ABI,
    functionName: 'transferWithAuthorization',
    args: [
      authorization.from,
      authorization.to,
      BigInt(authorization.value),
      BigInt(authorization.valid_after),
      BigInt(authorization.valid_before),
      authorization.nonce,
      authorization.signature,
    ],
  });
  await chain.publicClient.waitForTransactionReceipt({ hash });
  return hash;
}
