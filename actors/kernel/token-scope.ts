import { ServiceError } from '../../protocol/errors.ts';
import { READ_SCOPE, WORKSPACE_SCOPE_PREFIX, type Operation } from '../../protocol/operation.ts';
import type { Principal } from './principal.ts';
import type { Services } from './services.ts';

/**
 * What one API token lets its holder do. Every token belongs to one agent; a token with no
 * scopes has the agent's full reach, and each scope takes some away: `read` every write,
 * `workspace:<id>` every workspace but that one (and everything of the account that is not of
 * one workspace: other workspaces' changes, listings, deals by id...).
 */
export interface TokenGrant {
  readonly tokenId: string;
  readonly agentId: string;
  /** As stored and shown (`read`, `workspace:<id>`); empty: the agent's full access. */
  readonly scopes: readonly string[];
  /** Restricted at all: either scope is there. */
  readonly restricted: boolean;
  readonly readOnly: boolean;
  /** The one workspace a `workspace:<id>` token reaches; null: not restricted so. */
  readonly workspaceId: string | null;
  /** When it stops by itself (ms since the epoch); null: never. */
  readonly expiresAtMs: number | null;
}

export { WORKSPACE_SCOPE_PREFIX };

export function grantOf(token: {
  tokenId: string;
  agentId: string;
  scopes: readonly string[];
  expiresAt: Date | null;
}): TokenGrant {
  const workspaceScope = token.scopes.find((scope) => scope.startsWith(WORKSPACE_SCOPE_PREFIX));
  const readOnly = token.scopes.includes(READ_SCOPE);
  const workspaceId = workspaceScope ? workspaceScope.slice(WORKSPACE_SCOPE_PREFIX.length) : null;
  return Object.freeze({
    tokenId: token.tokenId,
    agentId: token.agentId,
    scopes: Object.freeze([...token.scopes]),
    restricted: readOnly || workspaceId !== null,
    readOnly,
    workspaceId,
    expiresAtMs: token.expiresAt === null ? null : token.expiresAt.getTime(),
  });
}

/**
 * The refusal of a restricted token used beyond its scopes: `needed` names the scope it lacks
 * (`write`, `account` or `workspace:<id>`), `scopes` what it has.
 */
export function scopeRefusal(grant: TokenGrant, needed: string, what: string): ServiceError {
  return new ServiceError(
    'token_scope',
    `This token is restricted (${grant.scopes.join(', ')}) and ${what} needs the scope \`${needed}\`. Use a token with that reach (create_token makes one).`,
    { needed, scopes: [...grant.scopes] },
  );
}

/**
 * Holds a restricted token to its scopes for one call of `operation` with its decoded
 * `input`; the doors call this for every operation (server/invoke.ts). Operations whose
 * `tokenScope` is `handler` check for themselves.
 */
export function assertTokenScope(operation: Operation, grant: TokenGrant, input: unknown): void {
  if (operation.tokenScope === 'handler') return;
  const writes = operation.readOnly !== true && operation.readScope !== 'handler';
  if (grant.readOnly && writes) {
    throw scopeRefusal(grant, 'write', `\`${operation.name}\` writes, so it`);
  }
  if (grant.workspaceId === null || operation.tokenScope === 'any-workspace') return;
  const named = (input as { workspace_id?: unknown } | null)?.workspace_id;
  if (typeof named !== 'string') {
    throw scopeRefusal(
      grant,
      'account',
      `\`${operation.name}\` reaches beyond one workspace, so it`,
    );
  }
  if (named !== grant.workspaceId) {
    throw scopeRefusal(grant, `workspace:${named}`, 'that workspace');
  }
}

/**
 * Refuses with `token_scope` when the caller's token may not write, and with
 * `signature_required` when its agent requires signed writes and the call is unsigned.
 */
export function assertMayWrite(principal: Principal, what: string): void {
  const grant = principal.token;
  if (grant?.readOnly) throw scopeRefusal(grant, 'write', what);
  if (principal.signatureRequired) throw signatureRequired(what);
}

/** The components a signature must cover, in the words of a refusal. */
const SIGN = ['@method', '@authority', '@path', '@query', 'authorization', 'content-digest'];

/** The refusal of an unsigned write by an agent that requires signatures; `what` needs one. */
export function signatureRequired(what: string): ServiceError {
  return new ServiceError(
    'signature_required',
    `You require signed requests (set_signature_policy), and ${what} changes state or mints a credential: sign the request per RFC 9421 with a live key of yours (\`Signature-Input\` with \`keyid\`, \`alg="ed25519"\`, \`created\`; \`Signature\`), covering "@method" "@authority" "@path", "@query" when there is a query, "authorization" when you send a token, and "content-digest" (sha-256) when there is a body. Reads need no signature.`,
    { sign: SIGN },
  );
}

/**
 * Holds an unsigned call of an agent that requires signatures to the operations that read: a
 * write is refused, and so is what mints a bearer secret (a storage link, even one that only
 * reads), so that a stolen token cannot make itself a credential of its own.
 */
export function assertSignedWrite(operation: Operation): void {
  const writes = operation.readOnly !== true && operation.readScope !== 'handler';
  if (writes || operation.mintsSecret === true) {
    throw signatureRequired(`\`${operation.name}\``);
  }
}

/**
 * How the capability that owns what a scope names (`workspace:<id>`: the workspaces) checks, when
 * a token with that scope is made, that the caller may reach it: a token for something the
 * caller cannot see would reach nothing, so the call is refused as a read of it would be.
 */
export interface ScopeTarget {
  /** The scopes it checks begin with this; the rest is the id it is asked about. */
  readonly prefix: string;
  assertReachable(services: Services, principal: Principal, id: string): Promise<void>;
}

/**
 * Refuses scopes that name something the caller may not reach, each asked of the capability that
 * owns it (`Capability.scopeTargets`). Every scope but `read` names something: one no capability
 * checks is refused, never let through unchecked.
 */
export async function assertScopesReachable(
  services: Services,
  principal: Principal,
  scopes: readonly string[],
): Promise<void> {
  for (const scope of scopes) {
    if (scope === READ_SCOPE) continue;
    const target = services.scopeTargets.find(({ prefix }) => scope.startsWith(prefix));
    if (!target) throw new Error(`No capability checks the token scope ${scope}.`);
    await target.assertReachable(services, principal, scope.slice(target.prefix.length));
  }
}
