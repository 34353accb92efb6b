import type { Capability } from '../kernel/capability.ts';
import type { ActorRegistry } from '../kernel/registry.ts';
import { loadAgentActor, type AgentActor } from './actor.ts';
import { signUp, whoami } from './handlers.ts';
import { createToken, listTokens, revokeToken, rotateToken } from './token-handlers.ts';
import { ensureHelpWorkspace, ensureOperator } from './operator.ts';
import { lockAgent } from '../../storage/agents/agents.ts';
import { agentsSettings } from './settings.ts';

declare module '../kernel/services.ts' {
  interface ServiceConfig {
    /** The operator's token (OPERATOR_TOKEN); a new one is made and logged when unset. */
    operatorToken?: string | undefined;
  }
  interface Services {
    /** Every agent, live while in use. */
    readonly agents: ActorRegistry<AgentActor>;
    /** The operator's public workspace of help documents (made at start-up). */
    readonly helpWorkspaceId: string;
  }
}

/** Agents: sign-up, the caller's account, the operator and its help workspace. */
export const agents = {
  name: 'agents',
  settings: agentsSettings,
  handlers: {
    sign_up: signUp,
    whoami,
    create_token: createToken,
    list_tokens: listTokens,
    revoke_token: revokeToken,
    rotate_token: rotateToken,
  },
  actors: [
    {
      kind: 'agent',
      registry: 'agents',
      load: async (agentId, db, services) => {
        const actor = await loadAgentActor(db, agentId);
        // A loaded agent's feed head seeds the change hub, so waiters know where it stands.
        if (actor) services.hub.seedHead(agentId, actor.lastSeqAtLoad);
        return actor;
      },
      lock: (agentId, tx) => lockAgent(tx, agentId),
      onEvict: (agentId, services) => services.hub.forget(agentId),
    },
  ],
  // The help workspace holds files: files start up first (actors/capabilities.ts).
  async startUp(services, log) {
    await ensureOperator(services, services.config.operatorToken, log);
    services.provide('helpWorkspaceId', await ensureHelpWorkspace(services));
  },
} satisfies Capability;
