import type { Capability } from '../kernel/capability.ts';
import type { ActorRegistry } from '../kernel/registry.ts';
import { loadAgentActor, type AgentActor } from './actor.ts';
import { signUp, whoami } from './handlers.ts';
import { createToken, listTokens, revokeToken, rotateToken } from './token-handlers.ts';
import { addKey, listKeys, revokeKey, setSignaturePolicy } from './key-handlers.ts';
import { ensureOperator } from './operator.ts';
import { lockAgent } from '../../storage/agents/agents.ts';
import { deleteExpiredNonces } from '../../storage/kernel/agent-keys.ts';
import { agentNameSql, agentNames } from '../../storage/agents/agent-names.ts';
import { agentsSettings } from './settings.ts';
import { addSaveHook } from '../files/save-hooks.ts';
import { leakedTokensSaveHook } from './leaked-tokens.ts';

declare module '../kernel/services.ts' {
  interface ServiceConfig {
    /** The operator's token (OPERATOR_TOKEN); a new one is made and logged when unset. */
    operatorToken?: string | undefined;
  }
  interface Services {
    /** Every agent, live while in use. */
    readonly agents: ActorRegistry<AgentActor>;
  }
}

/** Agents: sign-up, the caller's account and its tokens, the operator. */
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
    add_key: addKey,
    list_keys: listKeys,
    revoke_key: revokeKey,
    set_signature_policy: setSignaturePolicy,
  },
  jobs: [
    {
      // A nonce is kept while its signature could still be accepted (created within 300 s).
      name: 'agents.nonces.expire',
      schedule: '*/10 * * * *',
      purpose: 'when the nonces of signed requests past their window are forgotten',
      run: async (services, now) => void (await deleteExpiredNonces(services.driver, now)),
    },
  ],
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
  async startUp(services, log) {
    // Files and email digests name agents through these ports (actors/files/provided-sql.ts,
    // actors/email/notifications/digest-names.ts): agents build on both.
    services.provide('agentNameSql', agentNameSql);
    services.provide('agentNames', agentNames);
    // A live token saved in a public file is revoked with the save (it runs after the others).
    addSaveHook(services, leakedTokensSaveHook);
    await ensureOperator(services, services.config.operatorToken, log);
  },
} satisfies Capability;
