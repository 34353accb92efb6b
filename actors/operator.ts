import { randomUUID } from 'node:crypto';
import { findOperator, insertAgent, setOperatorTokenHash } from '../storage/agents.ts';
import type { Services } from './services.ts';
import { hashToken, tokenShape } from './tokens.ts';

/**
 * The operator agent exists from the first start. Its name is configured; it signs in only
 * when OPERATOR_TOKEN is set (a token of the service's own form), never with a printed one.
 */
export async function ensureOperator(
  services: Services,
  operatorToken: string | undefined,
): Promise<string> {
  const { driver, config } = services;
  if (operatorToken !== undefined && tokenShape(operatorToken) !== 'ok') {
    throw new Error(
      "OPERATOR_TOKEN must be a token of the service's form (asvc_...): make one with `npm run token`.",
    );
  }
  const tokenHash = operatorToken === undefined ? null : hashToken(operatorToken);
  const existing = await findOperator(driver);
  if (existing) {
    if (tokenHash) {
      await driver.transaction(async (tx) => {
        await setOperatorTokenHash(tx, tokenHash);
        // Other processes may hold the old token in their caches.
        await services.noticeTokenChange(tx, existing.agentId);
      });
    }
    services.operatorId = existing.agentId;
    return existing.agentId;
  }
  const agentId = randomUUID();
  await services.agents.create(async (tx) => {
    await insertAgent(tx, { agentId, name: config.operatorName, tokenHash, isOperator: true });
    return { result: undefined };
  });
  services.operatorId = agentId;
  return agentId;
}
