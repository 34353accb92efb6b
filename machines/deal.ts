import { assign, setup, type SnapshotFrom } from 'xstate';
import { machineCodec } from './codec.ts';

/**
 * A deal: a markdown file whose header names the parties, each with its Need and Can.
 * draft -> agreed -> delivered -> closed. Parties agree to an exact version of the file (its
 * sha256); the deal is agreed when every party of that version has agreed to it. Agreeing to a
 * later version opens a new round; the agreed round stays what was agreed until the new one is
 * complete, and it completes only with the agreement of every party it names and of every party
 * of what was agreed (so no round can drop a party without that party's own agreement). Every
 * party of a version that was ever agreed stays a party of the deal for good: it delivers, rates
 * and is rated whatever later rounds say. Once every party of what was agreed has rated every
 * other, the deal is closed. Events carry their own time; nothing here reads a clock or a
 * database.
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
  /**
   * Every party of every version that was agreed, in the order they became parties: the deal's
   * parties for good (delivering, rating, being rated, being counted), whatever later rounds say.
   */
  parties: string[];
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

type AgreeEvent = Extract<DealEvent, { type: 'agree' }>;

/**
 * Whose agreement a round of `parties` needs: every party it names and every party of what was
 * agreed, so that a new round cannot drop a party of the agreement without that party's consent.
 */
function requiredAgreements(context: DealContext, parties: readonly string[]): string[] {
  return [...new Set([...parties, ...(context.agreed?.parties ?? [])])];
}

/** Whether `agent` may agree to a version naming `parties`: named there, or bound by `agreed`. */
export function mayAgree(context: DealContext, agent: string, parties: readonly string[]): boolean {
  return requiredAgreements(context, parties).includes(agent);
}

function agreeing(context: DealContext, event: AgreeEvent): DealRound {
  const same = context.round?.version === event.version;
  const required = requiredAgreements(context, event.parties);
  // A round reopened for a version agreed to before keeps those agreements (`prior`).
  const round: DealRound = same
    ? (context.round as DealRound)
    : {
        version: event.version,
        sha256: event.sha256,
        parties: [...event.parties],
        agreed: (event.prior ?? []).filter((agent) => required.includes(agent)),
      };
  return round.agreed.includes(event.agent)
    ? round
    : { ...round, agreed: [...round.agreed, event.agent] };
}

const complete = (context: DealContext, round: DealRound) =>
  requiredAgreements(context, round.parties).every((p) => round.agreed.includes(p));

/** A party of the deal: of any version that was agreed, whatever the later rounds say. */
export const partyOfDeal = (context: DealContext, agent: string) => context.parties.includes(agent);

function allRated(context: DealContext, rated: string[]): boolean {
  const parties = context.agreed?.parties ?? [];
  return parties.every((rater) =>
    parties.every((ratee) => rater === ratee || rated.includes(`${rater}>${ratee}`)),
  );
}

/**
 * What an agreement leaves: a complete round becomes what was agreed (its ratings start anew
 * toward closing), and the parties it names join the deal's parties, none leaving.
 */
function afterAgreeing(context: DealContext, event: DealEvent): Partial<DealContext> {
  if (event.type !== 'agree') return {};
  const round = agreeing(context, event);
  if (!complete(context, round)) return { round };
  return {
    round: null,
    agreed: round,
    parties: [...new Set([...context.parties, ...round.parties])],
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
    // Only a party of the version being agreed or of what was agreed, to the sha256 of that
    // version (checked by the caller against the stored file), may agree.
    mayAgree: ({ context, event }) =>
      event.type === 'agree' && mayAgree(context, event.agent, event.parties),
    completesRound: ({ context, event }) =>
      event.type === 'agree' &&
      mayAgree(context, event.agent, event.parties) &&
      complete(context, agreeing(context, event)),
    partyOfDeal: ({ context, event }) =>
      event.type === 'deliver' && partyOfDeal(context, event.agent),
    rateable: ({ context, event }) =>
      event.type === 'rate' &&
      event.rater !== event.ratee &&
      partyOfDeal(context, event.rater) &&
      partyOfDeal(context, event.ratee),
    ratesLast: ({ context, event }) =>
      event.type === 'rate' &&
      event.rater !== event.ratee &&
      partyOfDeal(context, event.rater) &&
      partyOfDeal(context, event.ratee) &&
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
  context: ({ input }) => ({
    deal_id: input?.deal_id ?? '',
    round: null,
    agreed: null,
    parties: [],
    rated: [],
  }),
  initial: 'draft',
  states: {
    draft: {
      on: {
        agree: [
          { guard: 'completesRound', target: 'agreed', actions: 'agree' },
          { guard: 'mayAgree', actions: 'agree' },
        ],
      },
    },
    agreed: {
      on: {
        // A new round completing re-enters agreed: what was agreed is now the new version.
        agree: [
          { guard: 'completesRound', target: 'agreed', reenter: true, actions: 'agree' },
          { guard: 'mayAgree', actions: 'agree' },
        ],
        deliver: { guard: 'partyOfDeal', target: 'delivered' },
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
          { guard: 'mayAgree', actions: 'agree' },
        ],
        deliver: { guard: 'partyOfDeal' },
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
          { guard: 'mayAgree', actions: 'agree' },
        ],
        deliver: { guard: 'partyOfDeal' },
      },
    },
  },
});

export type DealSnapshot = SnapshotFrom<typeof dealMachine>;

/** A stored deal in today's form: one saved before the deal kept its parties gets them. */
function upgradeStoredDeal(saved: unknown): unknown {
  const snapshot = saved as DealSnapshot;
  const context = snapshot.context as DealContext & { parties?: string[] };
  // Saved before the deal kept its parties for good: what was agreed names all that is known.
  const parties = context.parties ?? context.agreed?.parties ?? [];
  return { ...snapshot, context: { ...context, parties } };
}

/**
 * A deal's first snapshot, its steps (`next === snapshot` when the machine refused the event),
 * its stored form and the way back, which upgrades deals stored in an older form.
 */
export const dealCodec = machineCodec(dealMachine, { upgrade: upgradeStoredDeal });

export function newDeal(dealId: string): DealSnapshot {
  return dealCodec.start({ deal_id: dealId });
}

export function dealStatus(snapshot: DealSnapshot): DealStatus {
  return snapshot.value as DealStatus;
}
