import { randomUUID } from 'node:crypto';
import type { Transaction } from '../../storage/driver.ts';
import { insertToken } from '../../storage/kernel/tokens.ts';
import { hashToken, newToken } from '../kernel/tokens.ts';

/** A new token's secret and its row, written in `tx`. */
export async function mintToken(
  tx: Transaction,
  token: {
    agentId: string;
    name: string;
    scopes: readonly string[];
    createdAt: Date;
    expiresAt: Date | null;
  },
): Promise<{ tokenId: string; apiToken: string }> {
  const apiToken = newToken();
  const tokenId = randomUUID();
  await insertToken(tx, {
    tokenId,
    ...token,
    tokenHash: hashToken(apiToken),
    restricted: token.scopes.length > 0,
  });
  return { tokenId, apiToken };
}
