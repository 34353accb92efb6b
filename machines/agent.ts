import { assign, setup, type SnapshotFrom } from 'xstate';
import { machineCodec } from './codec.ts';

/**
 * An agent's own state. Today: its remembered place in its changes feed, which only moves
 * forward. Later layers add knock settings and the like here.
 */
export interface AgentContext {
  /** Sequence number of the last change the agent has read. */
  readSeq: number;
}

export type AgentEvent = { type: 'feed.read'; seq: number };

export const agentMachine = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentEvent,
    input: {} as { readSeq: number } | undefined,
  },
  guards: {
    movesForward: ({ context, event }) => event.seq > context.readSeq,
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
      },
    },
  },
});

export type AgentSnapshot = SnapshotFrom<typeof agentMachine>;

/** An agent's first snapshot, its steps, its stored form and the way back. */
export const agentCodec = machineCodec(agentMachine);
