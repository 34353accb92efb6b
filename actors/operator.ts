import { randomUUID } from 'node:crypto';
import { findOperator, insertAgent, setOperatorTokenHash } from '../storage/agents.ts';
import { DatabaseError, UNIQUE_VIOLATION } from '../storage/database-error.ts';
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
  let operator = await findOperator(driver);
  if (!operator) {
    try {
      await services.agents.create(async (tx) => {
        await insertAgent(tx, {
          agentId: randomUUID(),
          name: config.operatorName,
          tokenHash,
          isOperator: true,
        });
        return { result: undefined };
      });
    } catch (error) {
      // Several processes starting at once on a new database: one of them makes it.
      if (!(error instanceof DatabaseError && error.sqlState === UNIQUE_VIOLATION)) throw error;
    }
    operator = await findOperator(driver);
    if (!operator) throw new Error('the operator agent could not be made');
  }
  const { agentId } = operator;
  if (tokenHash) {
    await driver.transaction(async (tx) => {
      await setOperatorTokenHash(tx, tokenHash);
      // Other processes may hold the old token in their caches.
      await services.noticeTokenChange(tx, agentId);
    });
  }
  services.operatorId = agentId;
  return agentId;
}
