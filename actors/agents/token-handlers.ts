import { ServiceError } from '../../protocol/errors.ts';
import { MAX_TOKENS_PER_AGENT } from '../../protocol/agents/tokens.ts';
import { lockAgent } from '../../storage/agents/agents.ts';
import type { Transaction } from '../../storage/driver.ts';
import {
  countLiveTokens,
  findToken,
  listLiveTokens,
  revokeToken as revokeTokenRow,
  shortenTokenExpiry,
} from '../../storage/kernel/tokens.ts';
import type { Handler } from '../kernel/handler.ts';
import { notFound, type Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import {
  assertScopesReachable,
  scopeRefusal,
  WORKSPACE_SCOPE_PREFIX,
  type TokenGrant,
} from '../kernel/token-scope.ts';
import { mintToken } from './token-records.ts';

const HOUR_MS = 3_600_000;

/**
 * Commits a change to the agent's tokens: `work` in one transaction that also tells other
 * processes; this process's cache forgets the agent's tokens after the commit.
 */
async function changeTokens<R>(
  services: Services,
  agentId: string,
  work: (tx: Transaction) => Promise<R>,
): Promise<R> {
  return services.commit(async (tx) => {
    const result = await work(tx);
    await services.noticeTokenChange(tx, agentId);
    return { result, afterCommit: () => services.forgetCredentials(agentId) };
  });
}

/**
 * The calling token's grant, or null where the call came with none: the email door acts for the
 * whole agent (proven by its mail), so there these operations have the agent's full reach. That
 * makes mail the way back in for an agent whose every token leaked.
 */
function callingToken(principal: Principal): TokenGrant | null {
  return principal.token;
}

/** Sorted and without repeats, so that equal scope lists compare equal. */
function normalScopes(scopes: readonly string[]): string[] {
  return [...new Set(scopes)].sort();
}

/**
 * A restricted token may make only tokens at least as restricted as itself, and a read-only
 * one none at all (making a token is a write). Names the scope the new one would exceed.
 */
function assertNoBroaderThan(
  grant: TokenGrant | null,
  scopes: readonly string[],
  expiresAt: Date | null,
) {
  if (grant === null) return;
  if (grant.readOnly) throw scopeRefusal(grant, 'write', 'making a token');
  if (grant.workspaceId !== null) {
    const own = `${WORKSPACE_SCOPE_PREFIX}${grant.workspaceId}`;
    const other = scopes.find((scope) => scope.startsWith(WORKSPACE_SCOPE_PREFIX) && scope !== own);
    if (other) throw scopeRefusal(grant, other, 'a token for another workspace');
    if (!scopes.includes(own))
      throw scopeRefusal(grant, 'account', 'a token beyond this workspace');
  }
  if (grant.restricted && grant.expiresAtMs !== null) {
    if (expiresAt === null || expiresAt.getTime() > grant.expiresAtMs) {
      throw scopeRefusal(
        grant,
        'account',
        `a token lasting past this one's expiry (${new Date(grant.expiresAtMs).toISOString()})`,
      );
    }
  }
}

export const createToken: Handler<'create_token'> = async ({ services, principal }, input) => {
  const grant = callingToken(principal);
  const scopes = normalScopes(input.scopes ?? []);
  const now = new Date(services.clock.now());
  const expiresAt =
    input.expires_in_hours === undefined
      ? null
      : new Date(now.getTime() + Math.round(input.expires_in_hours * HOUR_MS));
  assertNoBroaderThan(grant, scopes, expiresAt);
  // A token for a workspace the agent cannot see would reach nothing: say so now.
  await assertScopesReachable(services, principal, scopes);
  const made = await changeTokens(services, principal.agentId, async (tx) => {
    // Calls at once take turns on the agent's row, so that the count below holds exactly.
    await lockAgent(tx, principal.agentId);
    if ((await countLiveTokens(tx, principal.agentId, now)) >= MAX_TOKENS_PER_AGENT) {
      throw new ServiceError(
        'limit_reached',
        `You hold ${MAX_TOKENS_PER_AGENT} live tokens, the most one agent may: revoke one you no longer use (list_tokens shows them).`,
        { limit: MAX_TOKENS_PER_AGENT },
      );
    }
    return mintToken(tx, {
      agentId: principal.agentId,
      name: input.name,
      scopes,
      createdAt: now,
      expiresAt,
    });
  });
  return {
    token_id: made.tokenId,
    api_token: made.apiToken,
    name: input.name,
    scopes,
    expires_at: expiresAt?.toISOString() ?? null,
  };
};

export const listTokens: Handler<'list_tokens'> = async ({ services, principal }) => {
  const grant = callingToken(principal);
  const rows = await listLiveTokens(
    services.db(),
    principal.agentId,
    new Date(services.clock.now()),
  );
  // A token of one workspace sees itself only: the others' names may tell of other work.
  const shown =
    grant === null || grant.workspaceId === null
      ? rows
      : rows.filter((row) => row.tokenId === grant.tokenId);
  return {
    tokens: shown.map((row) => ({
      token_id: row.tokenId,
      name: row.name,
      scopes: row.scopes,
      created_at: row.createdAt.toISOString(),
      last_used_at: row.lastUsedAt?.toISOString() ?? null,
      expires_at: row.expiresAt?.toISOString() ?? null,
      current: row.tokenId === grant?.tokenId,
    })),
  };
};

export const revokeToken: Handler<'revoke_token'> = async ({ services, principal }, input) => {
  const grant = callingToken(principal);
  if (grant?.restricted && input.token_id !== grant.tokenId) {
    // Another token of the agent is no business of a restricted one: as if it were not there.
    if (grant.workspaceId !== null) throw notFound('token');
    throw scopeRefusal(grant, 'account', 'revoking another token');
  }
  const now = new Date(services.clock.now());
  const revoked = await changeTokens(services, principal.agentId, (tx) =>
    revokeTokenRow(tx, principal.agentId, input.token_id, now, 'revoked'),
  );
  if (!revoked) throw notFound('token');
  return { token_id: input.token_id, revoked: true as const };
};

export const rotateToken: Handler<'rotate_token'> = async ({ services, principal }, input) => {
  const grant = callingToken(principal);
  if (grant === null) {
    throw new ServiceError(
      'invalid_input',
      'rotate_token replaces the token the call is made with, and this call came with none (by mail): use create_token for a new one and revoke_token for the old.',
    );
  }
  const now = new Date(services.clock.now());
  const graceMs = Math.round((input.grace_hours ?? 0) * HOUR_MS);
  const stopsAt = new Date(now.getTime() + graceMs);
  const made = await changeTokens(services, principal.agentId, async (tx) => {
    await lockAgent(tx, principal.agentId);
    const old = await findToken(tx, principal.agentId, grant.tokenId);
    if (!old || old.revokedAt !== null) {
      throw new ServiceError('unauthorized', 'That API token was revoked meanwhile.');
    }
    // With a grace the old token lives on beside the new one: rotating again and again within
    // it must not pass the limit. (Without one, the old dies here: the count stays.)
    if (
      graceMs > 0 &&
      (await countLiveTokens(tx, principal.agentId, now)) >= MAX_TOKENS_PER_AGENT
    ) {
      throw new ServiceError(
        'limit_reached',
        `You hold ${MAX_TOKENS_PER_AGENT} live tokens, the most one agent may: rotate without a grace, or revoke a token you no longer use first.`,
        { limit: MAX_TOKENS_PER_AGENT },
      );
    }
    const minted = await mintToken(tx, {
      agentId: principal.agentId,
      name: old.name,
      scopes: old.scopes,
      createdAt: now,
      expiresAt: old.expiresAt,
    });
    if (graceMs === 0) await revokeTokenRow(tx, principal.agentId, old.tokenId, now, 'rotated');
    else await shortenTokenExpiry(tx, old.tokenId, stopsAt);
    const oldStops =
      old.expiresAt !== null && old.expiresAt.getTime() < stopsAt.getTime()
        ? old.expiresAt
        : stopsAt;
    return { ...minted, old, oldStops };
  });
  return {
    token_id: made.tokenId,
    api_token: made.apiToken,
    name: made.old.name,
    scopes: made.old.scopes,
    expires_at: made.old.expiresAt?.toISOString() ?? null,
    old_token_id: made.old.tokenId,
    old_token_stops_at: made.oldStops.toISOString(),
  };
};
