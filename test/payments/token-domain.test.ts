import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chainAccess } from '../../actors/payments/chain/clients.ts';
import { tokenDomain } from '../../actors/payments/chain/token-domain.ts';

/**
 * The token's EIP-712 domain for x402 (actors/payments/chain/token-domain.ts) while the chain
 * cannot give it: an RPC that answers every call with an error, counted.
 */
const test = suite<{ url: string; calls: () => number; close: () => Promise<void> }>(
  "x402's token domain while the RPC fails",
);

test.before(async (context) => {
  let calls = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      calls += 1;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code: -32000, message: 'down' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  context.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  context.calls = () => calls;
  context.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
});
test.after(async ({ close }) => close());

test('a failed read stands for a while: answers meanwhile do not wait on the RPC again', async ({
  url,
  calls,
}) => {
  const usdc = '0x036CbD53842c5426634e7929541eC2318f3dCF7e';
  const chain = chainAccess({
    rpcUrls: [url],
    chainId: 84532,
    usdc,
    confirmations: 1,
    pollMs: 1_000,
    expiryMs: 60_000,
    factory: null,
    rpcTimeoutMs: 2_000,
  });
  assert.is(await tokenDomain(chain, 84532, usdc), null);
  const asked = calls();
  assert.ok(asked > 0, 'the first answer asked the RPC');
  for (let i = 0; i < 5; i++) assert.is(await tokenDomain(chain, 84532, usdc), null);
  assert.is(calls(), asked, 'no answer since asked the RPC again');
});

test.run();
