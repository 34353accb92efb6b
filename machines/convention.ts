import { assign, setup, type SnapshotFrom } from 'xstate';
import { machineCodec } from './codec.ts';

/**
 * A convention's standing in the store. A new one is `unplaced`: its listings live in the
 * store's wilderness (visible, undifferentiated). The operators `place` it in a cell of the
 * placement tree (root › agent › by) and it is `placed`; they may move a placed one to another
 * cell. Or they `refuse` it (the service may refuse conventions): no new listings on it. Only
 * the operator's events move it; anyone else's are ignored, which the caller reports.
 */
export interface ConventionContext {
  name: string;
  /** The cell in the placement tree, from `root`; null while unplaced. */
  placement: string[] | null;
  /** Why the operators refused it. */
  refusal: string | null;
}

export type ConventionEvent =
  | { type: 'place'; path: string[]; byOperator: boolean }
  | { type: 'refuse'; reason: string; byOperator: boolean };

export type ConventionStatus = 'unplaced' | 'placed' | 'refused';

export const conventionMachine = setup({
  types: {
    context: {} as ConventionContext,
    events: {} as ConventionEvent,
    input: {} as { name: string; placement?: string[] | null } | undefined,
  },
  guards: {
    byOperator: ({ event }) => event.byOperator,
  },
  actions: {
    takePlace: assign({
      placement: ({ event }) => (event.type === 'place' ? [...event.path] : null),
    }),
    takeRefusal: assign({
      refusal: ({ event }) => (event.type === 'refuse' ? event.reason : null),
      placement: null,
    }),
  },
}).createMachine({
  id: 'convention',
  // xstate's pure `transition` makes its scratch actor without input: that must not throw.
  context: ({ input }) => ({
    name: input?.name ?? '',
    placement: input?.placement ?? null,
    refusal: null,
  }),
  initial: 'unplaced',
  states: {
    unplaced: {
      always: { guard: ({ context }) => context.placement !== null, target: 'placed' },
      on: {
        place: { guard: 'byOperator', target: 'placed', actions: 'takePlace' },
        refuse: { guard: 'byOperator', target: 'refused', actions: 'takeRefusal' },
      },
    },
    placed: {
      on: {
        place: { guard: 'byOperator', target: 'placed', actions: 'takePlace', reenter: true },
        refuse: { guard: 'byOperator', target: 'refused', actions: 'takeRefusal' },
      },
    },
    refused: {
      on: {
        // The operators may change their minds: placing a refused convention places it.
        place: { guard: 'byOperator', target: 'placed', actions: 'takePlace' },
      },
    },
  },
});

export type ConventionSnapshot = SnapshotFrom<typeof conventionMachine>;

/** A convention's first snapshot, its steps, its stored form and the way back. */
export const conventionCodec = machineCodec(conventionMachine);

/** A new convention: unplaced, or placed in `placement` (the built-in ones). */
export function newConvention(name: string, placement: string[] | null = null): ConventionSnapshot {
  return conventionCodec.start({ name, placement });
}

export function conventionStatus(snapshot: ConventionSnapshot): ConventionStatus {
  if (snapshot.matches('placed')) return 'placed';
  if (snapshot.matches('refused')) return 'refused';
  return 'unplaced';
}

/** One event, decided purely: `moved` is false when the machine ignored it (not the operator). */
export function conventionStep(
  snapshot: ConventionSnapshot,
  event: ConventionEvent,
): { next: ConventionSnapshot; moved: boolean } {
  const next = conventionCodec.step(snapshot, event);
  return { next, moved: next !== snapshot && event.byOperator };
}
