import type { z } from 'zod';
import type { BindingCall, HandlerResult } from '../../protocol/binding.ts';
import type { OperationName, Operations } from '../../protocol/operations.ts';
import type { Principal } from './principal.ts';
import type { Services } from './services.ts';

/** What a door hands a handler: the caller (when authenticated), the services, and an abort. */
export interface Call {
  services: Services;
  /** The caller; null only on operations whose auth is `none` or `optional` (and no token came). */
  principal: Principal | null;
  /** Aborted when the caller goes away (long-poll stops waiting). */
  signal: AbortSignal;
}

/** An authenticated call: the door guarantees `principal` for operations with auth `agent`. */
type AgentCall = Call & { principal: Principal };

type Input<N extends OperationName> = z.output<Operations[N]['input']>;
export type Output<N extends OperationName> = z.input<Operations[N]['output']>;

/** A handler's call also has `body`, `headers` or `format` where its binding gives them. */
export type Handler<N extends OperationName> = (
  call: (Operations[N]['auth'] extends 'agent' ? AgentCall : Call) &
    BindingCall<Operations[N]['binding']>,
  input: Input<N>,
) => Promise<HandlerResult<Operations[N]['binding'], Output<N>>>;

export type Handlers = { [N in OperationName]: Handler<N> };
