import { randomUUID } from 'node:crypto';
import { nameProblem } from '../../protocol/agents/name.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { SERVICE_VERSION } from '../../protocol/version.ts';
import { insertAgent } from '../../storage/agents/agents.ts';
import { readAccountCounts } from '../../storage/agents/account-counts.ts';
import { looksLikeItContains } from './name.ts';
import { mintToken } from './token-records.ts';
import type { Handler, Output } from '../kernel/handler.ts';
import type { AccountCounts, Counted } from '../kernel/agent-counts.ts';
import { lasting } from '../kernel/lasting-answer.ts';
import type { AgentActor } from './actor.ts';
import type { Services } from '../kernel/services.ts';

/**
 * The operator's name may stand in no other agent's name, in any case and in no look-alike
 * letters (compared by confusables skeleton, protocol/agents/name.ts; spec: Agent). Then the rest of
 * the name rules: visible characters, a letter or digit, one script (protocol/agents/name.ts).
 */
function assertNameAllowed(name: string, operatorName: string): void {
  if (looksLikeItContains(name, operatorName)) {
    throw new ServiceError(
      'name_reserved',
      `Names may not contain "${operatorName}", in any letters that look like it: it is the service's own name. Choose another.`,
      { field: 'name' },
    );
  }
  const problem = nameProblem(name);
  if (problem !== null) throw new ServiceError('invalid_input', problem, { field: 'name' });
}

export const signUp: Handler<'sign_up'> = async ({ services }, { name }) => {
  const { config } = services;
  assertNameAllowed(name, config.operatorName);
  const agentId = randomUUID();
  const apiToken = await services.agents.create(async (tx) => {
    await insertAgent(tx, { agentId, name });
    const { apiToken } = await mintToken(tx, {
      agentId,
      name: 'sign-up',
      scopes: [],
      createdAt: new Date(services.clock.now()),
      expiresAt: null,
    });
    return {
      result: apiToken,
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

/**
 * The caller's account, from memory on the warm path: the agent actor (loaded by the door) and
 * its account figures (services.counts), which are computed in one statement from kept counts
 * and then held until a commit changes them or the first thing they count expires.
 */
export const whoami: Handler<'whoami'> = async ({ services, principal }) => {
  // The door has just loaded the caller: it is in memory (peek), unless evicted meanwhile.
  const agent =
    services.agents.peek(principal.agentId) ?? (await services.agents.get(principal.agentId));
  if (!agent) throw new ServiceError('unauthorized', 'That API token is not known.');
  const head = services.hub.head(agent.agentId) ?? agent.readSeq;
  const now = services.clock.now();
  const counts = await services.counts.get(agent.agentId, now, () =>
    countAccount(services, agent.agentId, now),
  );
  // While nothing it shows has changed, the answer is the same object, serialised once.
  const last = lastAnswers.get(counts);
  if (
    last &&
    last.agent === agent &&
    last.head === head &&
    last.readSeq === agent.readSeq &&
    last.requireSignature === agent.requireSignature
  ) {
    return last.answer;
  }
  const answer = lasting(whoamiAnswer(services, agent, head, counts));
  lastAnswers.set(counts, {
    agent,
    head,
    readSeq: agent.readSeq,
    requireSignature: agent.requireSignature,
    answer,
  });
  return answer;
};

/** The last `whoami` answer made from each account figures' copy (they go together). */
const lastAnswers = new WeakMap<
  AccountCounts,
  {
    agent: AgentActor;
    head: number;
    readSeq: number;
    requireSignature: boolean;
    answer: Output<'whoami'>;
  }
>();

function whoamiAnswer(
  services: Services,
  agent: AgentActor,
  head: number,
  counts: AccountCounts,
): Output<'whoami'> {
  // The parts other capabilities own (the storage use, of files), where the schema has them.
  const sections = Object.fromEntries(
    services.accountSections.map((section) => [section.key, section.show(counts, services)]),
  );
  return {
    agent_id: agent.agentId,
    name: agent.name,
    created_at: agent.createdAt,
    unread: {
      changes: Math.max(0, head - agent.readSeq),
      messages: counts.unreadMessages,
      knocks: counts.pendingKnocks,
    },
    ...sections,
    service_version: SERVICE_VERSION,
    knock_settings: { direct_knocks: counts.directKnocks },
    require_signature: agent.requireSignature,
  } as Output<'whoami'>;
}

async function countAccount(
  services: Services,
  agentId: string,
  now: number,
): Promise<Counted<AccountCounts>> {
  const row = await readAccountCounts(
    services.db(),
    agentId,
    new Date(now),
    services.pendingKnocksSql,
    services.accountPresenceSql,
  );
  if (!row) throw new ServiceError('unauthorized', 'That API token is not known.');
  return {
    value: {
      storage: { kept: row.kept, current: row.current, staged: row.staged, reserved: row.reserved },
      unreadMessages: row.unreadMessages,
      pendingKnocks: row.pendingKnocks,
      directKnocks: row.directKnocks,
      presence: row.presence,
    },
    validUntil: row.firstExpiry ? row.firstExpiry.getTime() : Infinity,
  };
}
