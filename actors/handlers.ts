import type { OperationName } from '../protocol/operations.ts';
import { OPERATIONS } from '../protocol/operations.ts';
import { CAPABILITIES, type CapabilityList } from './capabilities.ts';
import type { Call, Handlers } from './kernel/handler.ts';

/** Any operation's handler, whatever its input and answer. */
type AnyHandler = (call: Call, input: never) => Promise<unknown>;

/** `A | B` as `A & B`: every capability's handlers, merged. */
type Merged<U> = (U extends unknown ? (all: U) => void : never) extends (all: infer I) => void
  ? I
  : never;
type CapabilityHandlers = Merged<CapabilityList[number]['handlers']>;

/**
 * The handler, as every door calls it: each call made by an agent (at any door: HTTP, MCP, mail,
 * in any process) is first noted as the agent being seen (actors/presence/tracker.ts: a lookup
 * in memory, no write on the call's path). Every door runs operations through this table, so no
 * door, present or future, can leave it out.
 */
function seenThenRun(handler: AnyHandler): AnyHandler {
  return (call, input) => {
    const principal = call.principal;
    if (principal !== null) call.services.presence?.seen(principal.agentId);
    return handler(call, input);
  };
}

function mergeHandlers(): CapabilityHandlers {
  const merged: Partial<Record<string, unknown>> = {};
  for (const capability of CAPABILITIES) {
    for (const [name, handler] of Object.entries(capability.handlers)) {
      if (name in merged) throw new Error(`Two capabilities handle ${name}.`);
      if (!(name in OPERATIONS))
        throw new Error(`${capability.name} handles ${name}, no operation.`);
      merged[name as OperationName] = seenThenRun(handler as AnyHandler);
    }
  }
  return merged as CapabilityHandlers;
}

/**
 * The handler of every operation in protocol/operations.ts, from the capabilities' tables; the
 * doors look them up by name. An operation no capability handles fails to compile here.
 */
export const HANDLERS: Handlers = mergeHandlers();
