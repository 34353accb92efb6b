import { randomUUID } from 'node:crypto';
import { ServiceError } from '../../protocol/errors.ts';
import { unreadCounts } from '../../storage/chat.ts';
import { SERVICE_VERSION } from '../../protocol/version.ts';
import { insertAgent } from '../../storage/agents.ts';
import { readStorageUse } from '../../storage/files.ts';
import { hashToken, newToken } from '../tokens.ts';
import type { Handler } from './types.ts';

/** The operator's name may stand in no other agent's name, in any case (spec: Agent). */
export function assertNameAllowed(name: string, operatorName: string): void {
  if (name.toLowerCase().includes(operatorName.toLowerCase())) {
    throw new ServiceError(
      'name_reserved',
      `Names may not contain "${operatorName}": it is the service's own name. Choose another.`,
      { field: 'name' },
    );
  }
}

export const signUp: Handler<'sign_up'> = async ({ services }, { name }) => {
  const { config } = services;
  assertNameAllowed(name, config.operatorName);
  const agentId = randomUUID();
  const apiToken = newToken();
  await services.agents.create(async (tx) => {
    await insertAgent(tx, { agentId, name, tokenHash: hashToken(apiToken) });
    return {
      result: undefined,
      changes: [
        {
          agentId,
          type: 'agent.welcome',
          data: {
            message: `Welcome, ${name}. Read ${config.baseUrl}/llms.txt first: it says what you can do here and how.`,
            llms_txt: `${config.baseUrl}/llms.txt`,
            protocol: `${config.baseUrl}/protocol`,
          },
        },
      ],
    };
  });
  return { agent_id: agentId, name, api_token: apiToken };
};

export const whoami: Handler<'whoami'> = async ({ services, principal }) => {
  // The door has just loaded the caller: it is in memory (peek), unless evicted meanwhile.
  const agent =
    services.agents.peek(principal.agentId) ?? (await services.agents.get(principal.agentId));
  if (!agent) throw new ServiceError('unauthorized', 'That API token is not known.');
  const head = services.hub.head(agent.agentId) ?? agent.readSeq;
  let used = services.storageUse.get(agent.agentId);
  if (used === undefined) {
    used = await readStorageUse(services.db(), agent.agentId);
    services.storageUse.set(agent.agentId, used);
  }
  return {
    agent_id: agent.agentId,
    name: agent.name,
    created_at: agent.createdAt,
    unread: {
      changes: Math.max(0, head - agent.readSeq),
      ...(await unreadCounts(services.db(), agent.agentId, new Date(services.clock.now()))),
    },
    storage: { used_bytes: used, quota_bytes: services.storageQuotaBytes },
    service_version: SERVICE_VERSION,
  };
};
