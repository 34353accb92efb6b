/**
 * The block a payment is requested at: only a transfer in a later block credits it
 * (./crediting-rules.ts, `after_request`). It is the highest head any configured RPC reports,
 * not the agreed (lowest) one: an RPC that lags must not let a transfer made just before the
 * request count. An RPC that fails or answers nonsense is left out; when none answers there is
 * no head, and no payment is requested (`503 chain_unavailable`): a head read later, at the
 * first check, would be later than the payer's honest transfer, and none at all would let any
 * old transfer count.
 */
import type { PublicClient } from 'viem';

export async function headAtRequest(clients: readonly PublicClient[]): Promise<bigint | null> {
  const settled = await Promise.allSettled(clients.map((client) => client.getBlockNumber()));
  let highest: bigint | null = null;
  for (const outcome of settled) {
    if (outcome.status !== 'fulfilled') continue;
    const head = outcome.value;
    if (typeof head !== 'bigint' || head < 0n) continue;
    if (highest === null || head > highest) highest = head;
  }
  return highest;
}
