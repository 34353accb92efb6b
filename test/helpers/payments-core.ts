import type { HDAccount } from 'viem/accounts';
import * as assert from 'uvu/assert';
import type { PaymentWatcher } from '../../actors/payments/chain/watcher.ts';
import type { Config } from '../../server/config.ts';
import type { TestChain } from './chain.ts';
import { agree, agreeAll, dealRoom } from './deals.ts';
import { callJson } from './http.ts';
import type { TestServer } from './server.ts';
import type { Agent, Json } from './wire-types.ts';

/** The test server's settings for a payments test on `chain` (anvil, test/helpers/chain.ts). */
export const chainConfig = (chain: TestChain): Partial<Config> => ({
  chainRpcUrls: [chain.url],
  chainId: chain.chainId,
  usdcAddress: chain.usdc,
  forwarderFactoryAddress: chain.factory,
  confirmations: 2,
  chainPollMs: 50,
});

/** The exact sentence a payout address proof signs. */
export const proofMessage = (address: string, agentId: string) =>
  `I control ${address} and receive payments for agent ${agentId}.`;

/** set_payout_address over HTTP, signed by `account` (of `message` when given). */
export async function setPayout(
  server: TestServer,
  agent: Agent,
  account: HDAccount,
  message = proofMessage(account.address, agent.agent_id),
  address: string = account.address,
) {
  return callJson<{ agent_id: string; address: string; verified_at: string; code?: string }>(
    server,
    'PUT',
    '/whoami/payout-address',
    agent.api_token,
    { address, signature: await account.signMessage({ message }) },
  );
}

/** An agreed deal between two agents of a fresh workspace (payee first, then payer). */
export async function agreedPair(server: TestServer) {
  const room = await dealRoom(server);
  const [payee, payer] = room.parties as [Agent, Agent];
  const dealId = await agreeAll(server, [payee, payer], room.workspaceId, room.at);
  return { ...room, payee, payer, dealId };
}

/** A deal one party agreed to and the other not yet. */
export async function draftPair(server: TestServer) {
  const room = await dealRoom(server);
  const [payee, payer] = room.parties as [Agent, Agent];
  const agreed = await agree(server, payee, room.workspaceId, 'deal.md', room.at);
  assert.is(agreed.status, 200);
  return { ...room, payee, payer, dealId: agreed.body.deal_id };
}

export interface PaymentBody {
  payment_id: string;
  deal_id: string;
  workspace_id: string;
  status: string;
  payer_agent_id: string;
  payee_agent_id: string;
  amount_usdc: string;
  amount_units: string;
  memo: string;
  chain_id: number;
  token_address: string;
  payee_address: string;
  deposit_address: string | null;
  pay_to: string;
  pay_url: string;
  expires_at: string;
  tx_hash: string | null;
  history: { status: string; reason: string }[];
  /** Set on a refusal. */
  code?: string;
  [key: string]: unknown;
}

export const requestPayment = (server: TestServer, payee: Agent, body: Json) =>
  callJson<PaymentBody>(server, 'POST', '/payments', payee.api_token, body);

/** The parties of an agreed deal, as agreedPair answers them. */
export interface DealParties {
  payee: Agent;
  payer: Agent;
  dealId: string;
}

/** request_payment by the deal's payee, asking its payer for `amountUsdc`. */
export const askPayment = (
  server: TestServer,
  deal: DealParties,
  amountUsdc: string,
  memo: string,
) =>
  requestPayment(server, deal.payee, {
    deal_id: deal.dealId,
    payer_agent_id: deal.payer.agent_id,
    amount_usdc: amountUsdc,
    memo,
  });

/** The same, which must be taken (201): the payment requested. */
export async function requestedPayment(
  server: TestServer,
  deal: DealParties,
  amountUsdc: string,
  memo: string,
): Promise<PaymentBody> {
  const asked = await askPayment(server, deal, amountUsdc, memo);
  assert.is(asked.status, 201, JSON.stringify(asked.body));
  return asked.body;
}

/** The anvil keys the payments tests give the payer, the payee and a stranger to the deal. */
export function partyKeys(chain: TestChain) {
  const [, payer, payee, stranger] = chain.accounts;
  if (!payer || !payee || !stranger) throw new Error('anvil has too few accounts');
  return { payer, payee, stranger };
}

export const getPayment = (server: TestServer, agent: Agent, paymentId: string) =>
  callJson<PaymentBody>(server, 'GET', `/payments/${paymentId}`, agent.api_token);

export interface LogPage {
  code?: string;
  lines: { seq: number; at: string; kind: string; payment_id: string | null; data: Json }[];
  next_cursor: string | null;
}

export const readLog = (server: TestServer, agent: Agent, workspaceId: string, query = '') =>
  callJson<LogPage>(server, 'GET', `/workspaces/${workspaceId}/log${query}`, agent.api_token);

/** Ticks the watcher, makes the transfer 70 blocks deep (anvil finalizes 64 down), ticks again. */
export async function bury(chain: TestChain, watcher: PaymentWatcher) {
  for (let i = 0; i < 2; i += 1) await watcher.tick();
  await chain.mine(70);
  for (let i = 0; i < 3; i += 1) await watcher.tick();
}
