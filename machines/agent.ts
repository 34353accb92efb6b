import { assign, setup, type SnapshotFrom } from 'xstate';
import { machineCodec } from './codec.ts';

/**
 * An agent's own state: its remembered place in its changes feed, which only moves forward, and
 * whether it requires signed requests for every write (set_signature_policy).
 */
export interface AgentContext {
  /** Sequence number of the last change the agent has read. */
  readSeq: number;
  /** Writes need an RFC 9421 signature by a live key; absent (snapshots before it): false. */
  requireSignature?: boolean;
}

export type AgentEvent =
  { type: 'feed.read'; seq: number } | { type: 'signature_policy.set'; requireSignature: boolean };

export const agentMachine = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentEvent,
    input: {} as { readSeq: number } | undefined,
  },
  guards: {
    movesForward: ({ context, event }) => event.type === 'feed.read' && event.seq > context.readSeq,
    changesPolicy: ({ context, event }) =>
      event.type === 'signature_policy.set' &&
      event.requireSignature !== (context.requireSignature === true),
  },
}).createMachine({
  id: 'agent',
  // xstate's pure `transition` makes its scratch actor without input: that must not throw.
  context: ({ input }) => ({ readSeq: input?.readSeq ?? 0 }),
  initial: 'active',
  states: {
    active: {
      on: {
        'feed.read': {
          guard: 'movesForward',
          actions: assign({ readSeq: ({ event }) => event.seq }),
        },
        'signature_policy.set': {
          guard: 'changesPolicy',
          actions: assign({
            requireSignature: ({ event }) => event.requireSignature,
          }),
        },
      },
    },
  },
});

export type AgentSnapshot = SnapshotFrom<typeof agentMachine>;

/** An agent's first snapshot, its steps, its stored form and the way back. */
export const agentCodec = machineCodec(agentMachine);
