import {
  assign,
  createActor,
  initialTransition,
  setup,
  transition,
  type SnapshotFrom,
} from 'xstate';

/**
 * A deal: a markdown file whose header names the parties, each with its Need and Can.
 * draft -> agreed -> delivered -> closed. Parties agree to an exact version of the file (its
 * sha256); the deal is agreed when every party of that version has agreed to it. Agreeing to a
 * later version opens a new round; the agreed round stays what was agreed until the new one is
 * complete. After agreement a party may deliver (delivered) and rate the others; once every
 * party has rated every other, the deal is closed. Events carry their own time; nothing here
 * reads a clock or a database.
 */
export interface DealRound {
  version: number;
  sha256: string;
  parties: string[];
  /** Parties that agreed to this round, in order. */
  agreed: string[];
}

export interface DealContext {
  deal_id: string;
  /** The round being agreed (null when none is open). */
  round: DealRound | null;
  /** The last complete round: what was agreed. */
  agreed: DealRound | null;
  /** `rater>ratee` pairs rated in the agreed deal. */
  rated: string[];
}

export type DealEvent =
  | {
      type: 'agree';
      agent: string;
      version: number;
      sha256: string;
      parties: string[];
      /** Parties whose agreement to this version is on record already (a round reopened). */
      prior?: string[];
    }
  | { type: 'deliver'; agent: string }
  | { type: 'rate'; rater: string; ratee: string };

export type DealStatus = 'draft' | 'agreed' | 'delivered' | 'closed';

function agreeing(context: DealContext, event: Extract<DealEvent, { type: 'agree' }>): DealRound {
  const same = context.round?.version === event.version;
  // A round reopened for a version agreed to before keeps those agreements (`prior`).
  const round: DealRound = same
    ? (context.round as DealRound)
    : {
        version: event.version,
        sha256: event.sha256,
        parties: [...event.parties],
        agreed: (event.prior ?? []).filter((agent) => event.parties.includes(agent)),
      };
  return round.agreed.includes(event.agent)
    ? round
    : { ...round, agreed: [...round.agreed, event.agent] };
}

const complete = (round: DealRound) => round.parties.every((p) => round.agreed.includes(p));

const party = (context: DealContext, agent: string) =>
  context.agreed?.parties.includes(agent) ?? false;

function allRated(context: DealContext, rated: string[]): boolean {
  const parties = context.agreed?.parties ?? [];
  return parties.every((rater) =>
    parties.every((ratee) => rater === ratee || rated.includes(`${rater}>${ratee}`)),
  );
}

/** What an agreement leaves: a complete round becomes what was agreed (its ratings start anew). */
function afterAgreeing(context: DealContext, event: DealEvent): Partial<DealContext> {
  if (event.type !== 'agree') return {};
  const round = agreeing(context, event);
  if (!complete(round)) return { round };
  return {
    round: null,
    agreed: round,
    rated: context.agreed?.version === round.version ? context.rated : [],
  };
}

export const dealMachine = setup({
  types: {
    context: {} as DealContext,
    events: {} as DealEvent,
    input: {} as { deal_id: string } | undefined,
  },
  guards: {
    // Only a party of the version being agreed, to the sha256 of that version (checked by the
    // caller against the stored file), may agree.
    partyOfVersion: ({ event }) => event.type === 'agree' && event.parties.includes(event.agent),
    completesRound: ({ context, event }) =>
      event.type === 'agree' &&
      event.parties.includes(event.agent) &&
      complete(agreeing(context, event)),
    partyOfAgreed: ({ context, event }) => event.type === 'deliver' && party(context, event.agent),
    rateable: ({ context, event }) =>
      event.type === 'rate' &&
      event.rater !== event.ratee &&
      party(context, event.rater) &&
      party(context, event.ratee),
    ratesLast: ({ context, event }) =>
      event.type === 'rate' &&
      event.rater !== event.ratee &&
      party(context, event.rater) &&
      party(context, event.ratee) &&
      allRated(context, [...context.rated, `${event.rater}>${event.ratee}`]),
  },
  actions: {
    agree: assign(({ context, event }) => afterAgreeing(context, event)),
    rate: assign({
      rated: ({ context, event }) => {
        if (event.type !== 'rate') return context.rated;
        const pair = `${event.rater}>${event.ratee}`;
        return context.rated.includes(pair) ? context.rated : [...context.rated, pair];
      },
    }),
  },
}).createMachine({
  id: 'deal',
  context: ({ input }) => ({ deal_id: input?.deal_id ?? '', round: null, agreed: null, rated: [] }),
  initial: 'draft',
  states: {
    draft: {
      on: {
        agree: [
          { guard: 'completesRound', target: 'agreed', actions: 'agree' },
          { guard: 'partyOfVersion', actions: 'agree' },
        ],
      },
    },
    agreed: {
      on: {
        // A new round completing re-enters agreed: what was agreed is now the new version.
        agree: [
          { guard: 'completesRound', target: 'agreed', reenter: true, actions: 'agree' },
          { guard: 'partyOfVersion', actions: 'agree' },
        ],
        deliver: { guard: 'partyOfAgreed', target: 'delivered' },
        rate: [
          { guard: 'ratesLast', target: 'closed', actions: 'rate' },
          { guard: 'rateable', actions: 'rate' },
        ],
      },
    },
    delivered: {
      on: {
        agree: [
          { guard: 'completesRound', target: 'agreed', actions: 'agree' },
          { guard: 'partyOfVersion', actions: 'agree' },
        ],
        deliver: { guard: 'partyOfAgreed' },
        rate: [
          { guard: 'ratesLast', target: 'closed', actions: 'rate' },
          { guard: 'rateable', actions: 'rate' },
        ],
      },
    },
    closed: {
      on: {
        // A correction of a rating keeps it closed; a new round may still be agreed.
        rate: { guard: 'rateable', actions: 'rate' },
        agree: [
          { guard: 'completesRound', target: 'agreed', actions: 'agree' },
          { guard: 'partyOfVersion', actions: 'agree' },
        ],
        deliver: { guard: 'partyOfAgreed' },
      },
    },
  },
});

export type DealSnapshot = SnapshotFrom<typeof dealMachine>;

export function newDeal(dealId: string): DealSnapshot {
  return initialTransition(dealMachine, { deal_id: dealId })[0];
}

export function dealStatus(snapshot: DealSnapshot): DealStatus {
  return snapshot.value as DealStatus;
}

/** One event, decided purely; `next === snapshot` when the machine refused it. */
export function dealStep(snapshot: DealSnapshot, event: DealEvent): DealSnapshot {
  return transition(dealMachine, snapshot, event)[0];
}

export function persistDeal(snapshot: DealSnapshot): unknown {
  return dealMachine.getPersistedSnapshot(snapshot);
}

export function restoreDeal(saved: unknown): DealSnapshot {
  return createActor(dealMachine, {
    snapshot: saved as DealSnapshot,
    input: undefined,
  }).getSnapshot();
}
