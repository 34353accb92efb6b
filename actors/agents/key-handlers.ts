import { createHash } from 'node:crypto';
import { ServiceError } from '../../protocol/errors.ts';
import { MAX_KEYS_PER_AGENT } from '../../protocol/agents/keys.ts';
import { lockAgent } from '../../storage/agents/agents.ts';
import {
  countLiveKeys,
  insertKey,
  listLiveKeys,
  revokeKeyRow,
} from '../../storage/kernel/agent-keys.ts';
import type { Handler } from '../kernel/handler.ts';
import { notFound } from '../kernel/principal.ts';
import { publicKeyOf } from '../kernel/request-signatures.ts';
import type { Services } from '../kernel/services.ts';

/**
 * The RFC 7638 thumbprint of an Ed25519 JWK: the SHA-256 of its required members in
 * lexicographic order, without whitespace, in base64url.
 */
export function jwkThumbprint(x: string): string {
  const canonical = `{"crv":"Ed25519","kty":"OKP","x":"${x}"}`;
  return createHash('sha256').update(canonical).digest('base64url');
}

/** Tells this process and the others, after the commit, that the agent's keys changed. */
function keysChanged(services: Services, agentId: string) {
  return () => services.forgetCredentials(agentId);
}

function lastKeyRefusal(): ServiceError {
  return new ServiceError(
    'last_key',
    'You require signed requests (set_signature_policy), and this would leave you no live key to sign with: add another key first, or turn the policy off.',
  );
}

export const addKey: Handler<'add_key'> = async ({ services, principal }, input) => {
  const publicKey = Buffer.from(input.jwk.x, 'base64url');
  // The pattern took 43 base64url characters; the last one may still carry stray bits.
  if (publicKey.length !== 32 || publicKey.toString('base64url') !== input.jwk.x) {
    throw new ServiceError('invalid_input', 'jwk.x: not the base64url of 32 bytes.', {
      field: 'jwk.x',
    });
  }
  try {
    publicKeyOf(publicKey);
  } catch {
    throw new ServiceError('invalid_input', 'jwk.x: not an Ed25519 public key.', {
      field: 'jwk.x',
    });
  }
  const keyId = jwkThumbprint(input.jwk.x);
  const createdAt = new Date(services.clock.now());
  const agentId = principal.agentId;
  const added = await services.commit(async (tx) => {
    // Calls at once take turns on the agent's row, so that the count below holds exactly.
    await lockAgent(tx, agentId);
    if ((await countLiveKeys(tx, agentId)) >= MAX_KEYS_PER_AGENT) {
      throw new ServiceError(
        'limit_reached',
        `You hold ${MAX_KEYS_PER_AGENT} live signing keys, the most one agent may: revoke one you no longer use (list_keys shows them).`,
        { limit: MAX_KEYS_PER_AGENT },
      );
    }
    const row = await insertKey(tx, {
      keyId,
      agentId,
      publicKey,
      name: input.name ?? null,
      createdAt,
    });
    if (!row) {
      throw new ServiceError(
        'key_exists',
        `The key ${keyId} is live here already: list_keys shows yours. A key belongs to one agent; make a new one for another.`,
        { key_id: keyId },
      );
    }
    await services.noticeTokenChange(tx, agentId);
    return {
      result: row,
      // The agent hears of it wherever it listens: a key it did not add is a thief's.
      changes: [{ agentId, type: 'key.added', data: { key_id: row.keyId, name: row.name } }],
      afterCommit: keysChanged(services, agentId),
    };
  });
  return {
    key_id: added.keyId,
    name: added.name,
    created_at: added.createdAt.toISOString(),
  };
};

export const listKeys: Handler<'list_keys'> = async ({ services, principal }) => {
  const rows = await listLiveKeys(services.db(), principal.agentId);
  const agent = await services.agents.get(principal.agentId);
  return {
    keys: rows.map((row) => ({
      key_id: row.keyId,
      name: row.name,
      created_at: row.createdAt.toISOString(),
      last_used_at: row.lastUsedAt?.toISOString() ?? null,
    })),
    require_signature: agent?.requireSignature ?? false,
  };
};

export const revokeKey: Handler<'revoke_key'> = async ({ services, principal }, input) => {
  const agentId = principal.agentId;
  const now = new Date(services.clock.now());
  const revoked = await services.agents.command(agentId, async (agent, tx) => {
    // The agent's row is locked for this command: its policy and its key count hold.
    if (agent.requireSignature && (await countLiveKeys(tx, agentId)) <= 1) {
      const live = await listLiveKeys(tx, agentId);
      if (live.some((key) => key.keyId === input.key_id)) throw lastKeyRefusal();
    }
    const done = await revokeKeyRow(tx, agentId, input.key_id, now);
    if (done) await services.noticeTokenChange(tx, agentId);
    return {
      result: done,
      changes: done
        ? [{ agentId, type: 'key.revoked' as const, data: { key_id: input.key_id } }]
        : [],
      afterCommit: keysChanged(services, agentId),
    };
  });
  if (!revoked) throw notFound('key');
  return { key_id: input.key_id, revoked: true as const };
};

export const setSignaturePolicy: Handler<'set_signature_policy'> = async (
  { services, principal },
  input,
) => {
  const requireSignature = input.require_signature;
  const agentId = principal.agentId;
  const set = await services.agents.command(agentId, async (agent, tx) => {
    if (requireSignature && (await countLiveKeys(tx, agentId)) === 0) {
      throw new ServiceError(
        'last_key',
        'You have no live signing key: add one (add_key) before you require signatures, or nothing could write for you again but mail.',
      );
    }
    const next = agent.propose({ type: 'signature_policy.set', requireSignature });
    // Only a change is told: setting the policy it has already changes nothing.
    const changes = next
      ? [
          {
            agentId,
            type: 'signature_policy.changed' as const,
            data: { require_signature: requireSignature },
          },
        ]
      : [];
    return { result: requireSignature, next, changes };
  });
  if (set === null) throw new Error(`agent ${agentId} vanished`);
  return { require_signature: set };
};
