import { ServiceError } from '../../protocol/errors.ts';
import type { AgentRow } from '../../storage/agents/agents.ts';
import type { TokenGrant } from './token-scope.ts';

/** What a token lets its holder do. Every agent token has `agent`; the operator's adds `operator`. */
type Scope = 'agent' | 'operator';

/**
 * The caller, as every door hands it to every handler: who it is (the agent, as it appears on
 * changes it causes) and what its token may do. Handlers decide from this alone, never from
 * a door's own notion of the caller.
 */
export interface Principal {
  readonly agentId: string;
  readonly name: string;
  /** The agent as events and records name it (`actor` of a change). */
  readonly agent: { readonly agent_id: string; readonly name: string };
  readonly scopes: ReadonlySet<Scope>;
  readonly isOperator: boolean;
  /**
   * The API token the call came with and what it may do (./token-scope.ts); null where no
   * token was used (the email door acts for the whole agent, proven by its mail).
   */
  readonly token: TokenGrant | null;
  /** The key whose RFC 9421 signature this call carried (actors/kernel/request-signatures.ts). */
  readonly signedBy: string | null;
  /**
   * The agent requires signed requests (set_signature_policy) and this call carries none:
   * it may only read (server/invoke.ts refuses its writes with `401 signature_required`).
   */
  readonly signatureRequired: boolean;
}

export function principalOf(record: AgentRow): Principal {
  return Object.freeze({
    agentId: record.agentId,
    name: record.name,
    agent: Object.freeze({ agent_id: record.agentId, name: record.name }),
    scopes: new Set<Scope>(record.isOperator ? ['agent', 'operator'] : ['agent']),
    isOperator: record.isOperator,
    token: null,
    signedBy: null,
    signatureRequired: false,
  });
}

/** The agent's principal as a call with `grant` sees it. */
export function withToken(base: Principal, grant: TokenGrant): Principal {
  return Object.freeze({ ...base, token: grant });
}

/** `principal`, as a call signed by its agent's key `keyId` sees it. */
export function signedWith(principal: Principal, keyId: string): Principal {
  return Object.freeze({ ...principal, signedBy: keyId, signatureRequired: false });
}

const unsignedOf = new WeakMap<Principal, Principal>();

/** `principal`, as an unsigned call of an agent that requires signatures sees it: reads only. */
export function unsigned(principal: Principal): Principal {
  let made = unsignedOf.get(principal);
  if (!made) {
    made = Object.freeze({ ...principal, signatureRequired: true });
    unsignedOf.set(principal, made);
  }
  return made;
}

/**
 * How a kind of thing is asked for, where that is not by its id: a file by its path (and a
 * version number), so its refusal names what the caller sent.
 */
const ASKED_FOR_BY: Readonly<Record<string, string>> = {
  file: 'at that path',
  'file version': 'with that path and version',
};

/**
 * The one refusal for "not there, or not yours to see" (protocol/documents/protocol.md,
 * "Requests and answers"): the same code and the same words whichever it is, so an answer
 * never tells a stranger that something exists.
 * `what` names the kind of thing ("workspace", "invite"), never the id or path asked for.
 */
export function notFound(what: string): ServiceError {
  const by = ASKED_FOR_BY[what] ?? 'with that id';
  return new ServiceError('not_found', `There is no ${what} ${by} that you can see.`);
}

/**
 * `thing` when it exists and `canSee` says the caller may see it; otherwise the same 404 as
 * for something that does not exist. Every capability checks visibility through this.
 */
export function visibleOrNotFound<T>(
  thing: T | null | undefined,
  canSee: (thing: T) => boolean,
  what: string,
): T {
  if (thing === null || thing === undefined || !canSee(thing)) throw notFound(what);
  return thing;
}
