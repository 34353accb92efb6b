import type { OperationName } from '../protocol/operations.ts';
import { OPERATIONS } from '../protocol/operations.ts';
import { CAPABILITIES, type CapabilityList } from './capabilities.ts';
import type { Handlers } from './kernel/handler.ts';

/** `A | B` as `A & B`: every capability's handlers, merged. */
type Merged<U> = (U extends unknown ? (all: U) => void : never) extends (all: infer I) => void
  ? I
  : never;
type CapabilityHandlers = Merged<CapabilityList[number]['handlers']>;

function mergeHandlers(): CapabilityHandlers {
  const merged: Partial<Record<string, unknown>> = {};
  for (const capability of CAPABILITIES) {
    for (const [name, handler] of Object.entries(capability.handlers)) {
      if (name in merged) throw new Error(`Two capabilities handle ${name}.`);
      if (!(name in OPERATIONS))
        throw new Error(`${capability.name} handles ${name}, no operation.`);
      merged[name as OperationName] = handler;
    }
  }
  return merged as CapabilityHandlers;
}

/**
 * The handler of every operation in protocol/operations.ts, from the capabilities' tables; the
 * doors look them up by name. An operation no capability handles fails to compile here.
 */
export const HANDLERS: Handlers = mergeHandlers();
