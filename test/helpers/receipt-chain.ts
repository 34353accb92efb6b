import { createPublicKey, verify } from 'node:crypto';
import * as assert from 'uvu/assert';
import { canonicalJson } from '../../protocol/jcs.ts';
import { dealOf } from './deals.ts';
import { sha256 } from './digests.ts';
import { callJson as call } from './http.ts';
import type { TestServer } from './server.ts';
import type { Agent, Json, Receipt } from './wire-types.ts';

/**
 * A workspace's receipt chain as anyone checks it (deals-protocol.md): each receipt names the
 * hash of the one before as its `prev_hash`, and verifies with the published keys alone.
 */

/** What a receipt following `receipt` names as its `prev_hash`. */
export const receiptHash = (receipt: Json) => sha256(canonicalJson(receipt));

export interface Jwks {
  keys: { kid: string; kty: string; crv: string; x: string }[];
}

export const jwksOf = async (server: TestServer) =>
  (await (await fetch(server.url('/.well-known/service-keys.json'))).json()) as Jwks;

/** Whether `receipt` verifies with the published keys alone, with plain node:crypto. */
export function verifies(receipt: Receipt, jwks: Jwks): boolean {
  const jwk = jwks.keys.find((key) => key.kid === receipt.kid);
  if (!jwk || jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519') return false;
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
  const { signature, ...unsigned } = receipt;
  return verify(
    null,
    Buffer.from(canonicalJson(unsigned)),
    key,
    Buffer.from(signature, 'base64url'),
  );
}

/**
 * Every receipt of a workspace, as list_receipts answers it on `server` (the whole chain: files
 * and deals); each receipt get_deal shows for `dealPaths` is among them, the same bytes.
 */
export async function allReceipts(
  server: TestServer,
  agent: Agent,
  workspaceId: string,
  dealPaths: string[],
): Promise<Receipt[]> {
  const listed = await call<{ receipts: Receipt[]; next_cursor: string | null }>(
    server,
    'GET',
    `/workspaces/${workspaceId}/receipts?limit=100`,
    agent.api_token,
  );
  assert.is(listed.status, 200);
  assert.is(listed.body.next_cursor, null, 'the whole chain on one page');
  const receipts = listed.body.receipts;
  const byId = new Map(receipts.map((r) => [r.receipt_id, r]));
  for (const path of dealPaths) {
    const deal = await dealOf(server, agent, workspaceId, path);
    for (const receipt of [
      ...deal.agreements.map((a) => a.receipt),
      ...deal.deliveries.map((d) => d.receipt),
      ...deal.ratings.map((r) => r.receipt),
    ]) {
      assert.equal(byId.get(receipt.receipt_id), receipt, 'list_receipts holds the deal receipt');
    }
  }
  return receipts;
}

/**
 * The receipts in chain order, from the workspace's first (prev_hash null): fails the test if
 * two name the same predecessor (a fork) or one is not reached by the walk.
 */
export function chainOrder(receipts: Receipt[]): Receipt[] {
  const byPrev = new Map<string | null, Receipt>();
  for (const receipt of receipts) {
    assert.not.ok(
      byPrev.has(receipt.prev_hash),
      `two receipts follow ${receipt.prev_hash}: the chain forks`,
    );
    byPrev.set(receipt.prev_hash, receipt);
  }
  const order: Receipt[] = [];
  let next = byPrev.get(null);
  while (next) {
    order.push(next);
    next = byPrev.get(receiptHash(next));
  }
  assert.is(order.length, receipts.length, 'one unbroken chain holds every receipt');
  return order;
}
