import { randomUUID } from 'node:crypto';
import { agentNameSchema } from '../../protocol/agents/account.ts';
import { nameProblem } from '../../protocol/agents/name.ts';
import { findOperator, insertAgent } from '../../storage/agents/agents.ts';
import { setOperatorToken } from '../../storage/kernel/tokens.ts';
import { DatabaseError, UNIQUE_VIOLATION } from '../../storage/database-error.ts';
import type { Services } from '../kernel/services.ts';
import { hashToken, tokenShape } from '../kernel/tokens.ts';

/**
 * The operator agent exists from the first start. Its name is configured; it signs in only
 * when OPERATOR_TOKEN is set (a token of the service's own form), never with a printed one.
 */
export async function ensureOperator(
  services: Services,
  operatorToken: string | undefined,
  log: (message: string) => void = () => undefined,
): Promise<string> {
  const { driver, config } = services;
  // Every other name is held against this one: it must be a name an agent could have.
  const nameRefusal = agentNameSchema.safeParse(config.operatorName).error?.issues[0]?.message;
  const problem = nameRefusal ?? nameProblem(config.operatorName);
  if (problem)
    throw new Error(`OPERATOR_NAME "${config.operatorName}" is not a valid name: ${problem}`);
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
    const outcome = await driver.transaction(async (tx) => {
      const set = await setOperatorToken(
        tx,
        agentId,
        tokenHash,
        randomUUID(),
        new Date(services.clock.now()),
      );
      // Other processes may hold the old token in their caches.
      if (set === 'set') await services.noticeTokenChange(tx, agentId);
      return set;
    });
    if (outcome === 'revoked') {
      log(
        'OPERATOR_TOKEN was revoked (list_tokens and the operator log say why) and does not come back: set a new one (`npm run token`).',
      );
    }
  }
  services.operatorId = agentId;
  return agentId;
}
