import { assign, setup, type SnapshotFrom } from 'xstate';
import { machineCodec } from './codec.ts';

/**
 * A payment in USDC, payer to payee, checked on-chain: requested -> seen (a matching transfer is
 * in a block) -> confirmed (enough blocks on top, every RPC agreeing on the block hash) -> final;
 * requested -> expired; seen | confirmed -> requested again when a reorg drops the crediting
 * block. `expired` and `final` are terminal. The machine credits nothing on doubt: an RPC that
 * fails or answers nonsense is recorded as an "unknown" check and moves nothing (a payment is
 * never shown as failed, so nobody pays twice on a wrong "failed"). Every event carries its own
 * `at` (ms since the epoch); nothing here reads a clock, a chain or a database.
 */

/** How many moves a payment keeps in its history: the newest, so a stored row stays bounded. */
export const PAYMENT_HISTORY_LIMIT = 50;
/** How much of an unknown check's reason is kept: RPC errors can be long. */
export const PAYMENT_REASON_LIMIT = 500;

export type PaymentStatus = 'requested' | 'seen' | 'confirmed' | 'final' | 'expired';

/** What one RPC answered for the crediting block: its hash there (null: it knew no such block). */
export interface PaymentRpcAnswer {
  rpc: string;
  block_hash: string | null;
}

/** The credited transfer: a `Transfer` log of the configured USDC contract, as the chain told it. */
export interface PaymentEvidence {
  tx_hash: string;
  log_index: number;
  block_number: number;
  block_hash: string;
  from: string;
  to: string;
  /** The transfer's value in micro-USDC, a decimal integer string (JSON holds no bigint). */
  amount_units: string;
  confirmations: number;
  /** When the chain was last asked (ms since the epoch). */
  checked_at: number;
  rpc_answers: PaymentRpcAnswer[];
}

/**
 * A reported transaction the service could not decide about (an RPC failed, timed out or
 * answered nonsense): its hash is kept and its result is "unknown", never "failed".
 */
interface PaymentCheck {
  result: 'unknown';
  tx_hash: string;
  reason: string;
  at: number;
}

export interface PaymentHistoryEntry {
  status: PaymentStatus;
  at: number;
  reason: string;
  /** The transaction of the move: credited (seen), confirmed, or dropped by a reorg. */
  tx_hash?: string;
}

export interface PaymentInput {
  payment_id: string;
  /** The amount asked, micro-USDC as a decimal integer string. */
  amount_units: string;
  /** Where a direct transfer must go (the payee's payout address when requested). */
  payee_address: string;
  /** The payment's own deposit address, null when the service has no forwarder factory. */
  deposit_address: string | null;
  /** Blocks (the crediting one included) needed before the payment is confirmed. */
  confirmations_required: number;
  created_at: number;
  expires_at: number;
}

export interface PaymentContext extends PaymentInput {
  /** The credited transfer; null while requested (and again after a reorg dropped it). */
  evidence: PaymentEvidence | null;
  /** The last check that came to no answer, null once a transfer is credited. */
  check: PaymentCheck | null;
  /** The transaction a reorg dropped last: it may still be credited when mined again, late. */
  dropped_tx_hash: string | null;
  /** The moves, oldest first, the newest PAYMENT_HISTORY_LIMIT. */
  history: PaymentHistoryEntry[];
}

export type PaymentEvent =
  | { type: 'SEEN'; evidence: PaymentEvidence; at: number }
  | {
      type: 'CONFIRMED';
      confirmations: number;
      block_hash: string;
      rpc_answers: PaymentRpcAnswer[];
      at: number;
    }
  | { type: 'FINAL'; at: number }
  | { type: 'REORGED'; at: number; reason?: string }
  | { type: 'EXPIRE'; at: number }
  | { type: 'CHECKED_UNKNOWN'; tx_hash: string; reason: string; at: number };

type SeenEvent = Extract<PaymentEvent, { type: 'SEEN' }>;
type ConfirmedEvent = Extract<PaymentEvent, { type: 'CONFIRMED' }>;

const UNITS = /^[0-9]{1,30}$/;

const sameAddress = (a: string | null, b: string) =>
  a !== null && a.toLowerCase() === b.toLowerCase();

/**
 * Whether `evidence` may credit the payment at `at`: a transfer to the payee or the deposit
 * address of at least the amount, before the payment expired (a transfer mined after expiry is
 * not credited), unless it is the very transaction a reorg dropped, mined again.
 */
function creditable(context: PaymentContext, evidence: PaymentEvidence, at: number): boolean {
  const inTime = at < context.expires_at || evidence.tx_hash === context.dropped_tx_hash;
  const recipient =
    sameAddress(context.payee_address, evidence.to) ||
    sameAddress(context.deposit_address, evidence.to);
  return (
    inTime &&
    recipient &&
    UNITS.test(evidence.amount_units) &&
    UNITS.test(context.amount_units) &&
    BigInt(evidence.amount_units) >= BigInt(context.amount_units)
  );
}

/**
 * Whether a confirmation count may confirm (or keep confirmed) the credited transfer: its block
 * hash is the credited block's, every RPC asked answered that same hash, enough blocks are on
 * top, and the count never goes back.
 */
function confirms(context: PaymentContext, event: ConfirmedEvent): boolean {
  const evidence = context.evidence;
  return (
    evidence !== null &&
    event.block_hash === evidence.block_hash &&
    event.rpc_answers.length > 0 &&
    event.rpc_answers.every((answer) => answer.block_hash === event.block_hash) &&
    Number.isInteger(event.confirmations) &&
    event.confirmations >= context.confirmations_required &&
    event.confirmations >= evidence.confirmations
  );
}

function remember(context: PaymentContext, entry: PaymentHistoryEntry): PaymentHistoryEntry[] {
  return [...context.history, entry].slice(-PAYMENT_HISTORY_LIMIT);
}

function credited(context: PaymentContext, event: SeenEvent): Partial<PaymentContext> {
  return {
    evidence: event.evidence,
    check: null,
    history: remember(context, {
      status: 'seen',
      at: event.at,
      reason: `transfer in block ${event.evidence.block_number}`,
      tx_hash: event.evidence.tx_hash,
    }),
  };
}

function counted(context: PaymentContext, event: ConfirmedEvent): Partial<PaymentContext> {
  const evidence = context.evidence as PaymentEvidence;
  return {
    evidence: {
      ...evidence,
      confirmations: event.confirmations,
      checked_at: event.at,
      rpc_answers: event.rpc_answers,
    },
    check: null,
  };
}

export const paymentMachine = setup({
  types: {
    context: {} as PaymentContext,
    events: {} as PaymentEvent,
    input: {} as PaymentInput | undefined,
  },
  guards: {
    creditable: ({ context, event }) =>
      event.type === 'SEEN' && creditable(context, event.evidence, event.at),
    confirms: ({ context, event }) => event.type === 'CONFIRMED' && confirms(context, event),
    runOut: ({ context, event }) => event.type === 'EXPIRE' && event.at >= context.expires_at,
  },
  actions: {
    credit: assign(({ context, event }) => (event.type === 'SEEN' ? credited(context, event) : {})),
    count: assign(({ context, event }) =>
      event.type === 'CONFIRMED' ? counted(context, event) : {},
    ),
    noteConfirmed: assign({
      history: ({ context, event }) =>
        remember(context, {
          status: 'confirmed',
          at: event.at,
          reason: `${context.evidence?.confirmations ?? 0} confirmations, every RPC agreeing`,
          tx_hash: context.evidence?.tx_hash,
        }),
    }),
    noteFinal: assign({
      history: ({ context, event }) =>
        remember(context, {
          status: 'final',
          at: event.at,
          reason: 'final',
          tx_hash: context.evidence?.tx_hash,
        }),
    }),
    // The crediting block is gone: the transfer no longer counts until it is seen again.
    drop: assign(({ context, event }) => ({
      evidence: null,
      check: null,
      dropped_tx_hash: context.evidence?.tx_hash ?? null,
      history: remember(context, {
        status: 'requested',
        at: event.at,
        reason:
          event.type === 'REORGED' && event.reason !== undefined
            ? event.reason
            : `reorg dropped block ${context.evidence?.block_number ?? '?'}`,
        tx_hash: context.evidence?.tx_hash,
      }),
    })),
    noteExpired: assign({
      history: ({ context, event }) =>
        remember(context, { status: 'expired', at: event.at, reason: 'expired unpaid' }),
    }),
    // Recorded, never a move: what could not be decided is "unknown", with its hash kept.
    noteUnknown: assign({
      check: ({ context, event }) =>
        event.type === 'CHECKED_UNKNOWN'
          ? {
              result: 'unknown' as const,
              tx_hash: event.tx_hash,
              reason: event.reason.slice(0, PAYMENT_REASON_LIMIT),
              at: event.at,
            }
          : context.check,
    }),
  },
}).createMachine({
  id: 'payment',
  context: ({ input }) => ({
    payment_id: input?.payment_id ?? '',
    amount_units: input?.amount_units ?? '0',
    payee_address: input?.payee_address ?? '',
    deposit_address: input?.deposit_address ?? null,
    confirmations_required: input?.confirmations_required ?? 1,
    created_at: input?.created_at ?? 0,
    expires_at: input?.expires_at ?? 0,
    evidence: null,
    check: null,
    dropped_tx_hash: null,
    history: [{ status: 'requested', at: input?.created_at ?? 0, reason: 'requested' }],
  }),
  initial: 'requested',
  states: {
    requested: {
      on: {
        SEEN: { guard: 'creditable', target: 'seen', actions: 'credit' },
        EXPIRE: { guard: 'runOut', target: 'expired', actions: 'noteExpired' },
        CHECKED_UNKNOWN: { actions: 'noteUnknown' },
      },
    },
    seen: {
      on: {
        CONFIRMED: { guard: 'confirms', target: 'confirmed', actions: ['count', 'noteConfirmed'] },
        REORGED: { target: 'requested', actions: 'drop' },
        CHECKED_UNKNOWN: { actions: 'noteUnknown' },
      },
    },
    confirmed: {
      on: {
        // More blocks on top: the count grows, the state stays.
        CONFIRMED: { guard: 'confirms', actions: 'count' },
        FINAL: { target: 'final', actions: 'noteFinal' },
        REORGED: { target: 'requested', actions: 'drop' },
        CHECKED_UNKNOWN: { actions: 'noteUnknown' },
      },
    },
    final: { type: 'final' },
    expired: { type: 'final' },
  },
});

export type PaymentSnapshot = SnapshotFrom<typeof paymentMachine>;

/**
 * A payment's first snapshot, its steps (`next === snapshot` when the machine ignored the
 * event), its stored form and the way back.
 */
export const paymentCodec = machineCodec(paymentMachine);

export function newPayment(input: PaymentInput): PaymentSnapshot {
  return paymentCodec.start(input);
}

export function paymentStatus(snapshot: PaymentSnapshot): PaymentStatus {
  return snapshot.value as PaymentStatus;
}
