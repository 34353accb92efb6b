import { assign, setup, type SnapshotFrom } from 'xstate';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { MachineActor } from '../../actors/kernel/machine-actor.ts';
import { machineCodec } from '../../machines/codec.ts';
import type { Transaction } from '../../storage/driver.ts';

const test = suite('machine codec and machine-backed actors');

/** A ticket: open -> closed, counting its comments; closing needs a reason. */
const ticketMachine = setup({
  types: {
    context: {} as { id: string; comments: number; reason: string | null },
    events: {} as { type: 'comment' } | { type: 'close'; reason: string },
    input: {} as { id: string } | undefined,
  },
}).createMachine({
  context: ({ input }) => ({ id: input?.id ?? '', comments: 0, reason: null }),
  initial: 'open',
  states: {
    open: {
      on: {
        comment: { actions: assign({ comments: ({ context }) => context.comments + 1 }) },
        close: {
          guard: ({ event }) => event.reason.length > 0,
          target: 'closed',
          actions: assign({ reason: ({ event }) => event.reason }),
        },
      },
    },
    closed: { type: 'final' },
  },
});

type Ticket = SnapshotFrom<typeof ticketMachine>;
const tickets = machineCodec(ticketMachine);

/** Through JSON, as the `machine` column keeps it. */
const stored = (snapshot: Ticket): unknown => JSON.parse(JSON.stringify(tickets.persist(snapshot)));

test('a snapshot starts from its input and steps by its events', () => {
  const start = tickets.start({ id: 't-1' });
  assert.ok(start.matches('open'));
  assert.equal(start.context, { id: 't-1', comments: 0, reason: null });
  const closed = tickets.step(tickets.step(start, { type: 'comment' }), {
    type: 'close',
    reason: 'done',
  });
  assert.ok(closed.matches('closed'));
  assert.equal(closed.context, { id: 't-1', comments: 1, reason: 'done' });
});

test('an event the machine ignores gives back the very same snapshot', () => {
  const start = tickets.start({ id: 't-1' });
  assert.is(tickets.step(start, { type: 'close', reason: '' }), start);
  const closed = tickets.step(start, { type: 'close', reason: 'done' });
  assert.is(tickets.step(closed, { type: 'comment' }), closed);
});

test('a snapshot comes back from its stored form where it was, and steps on from there', () => {
  const commented = tickets.step(tickets.start({ id: 't-2' }), { type: 'comment' });
  const restored = tickets.restore(stored(commented));
  assert.ok(restored.matches('open'));
  assert.equal(restored.context, commented.context);
  assert.equal(stored(restored), stored(commented));
  const closed = tickets.step(restored, { type: 'close', reason: 'fixed' });
  assert.ok(closed.matches('closed'));
  assert.is(closed.context.comments, 1);
});

/** A ticket actor whose row is a variable: `save` writes it under the version, as SQL would. */
class TicketActor extends MachineActor<typeof ticketMachine> {
  row: { version: number; machine: unknown; status: string };

  constructor(row: { version: number; machine: unknown; status: string }) {
    super(tickets, tickets.restore(row.machine), row.version);
    this.row = row;
  }

  protected async save(_tx: Transaction, next: Ticket, machine: unknown): Promise<number | null> {
    if (this.row.version !== this.version) return null;
    this.row = { version: this.version + 1, machine, status: String(next.value) };
    return this.row.version;
  }
}

const tx = {} as Transaction;

test('an actor proposes the next snapshot without taking it, and nothing for an ignored event', () => {
  const actor = new TicketActor({
    version: 1,
    machine: stored(tickets.start({ id: 't-3' })),
    status: 'open',
  });
  const before = actor.state;
  const next = actor.propose({ type: 'comment' });
  assert.is(next?.context.comments, 1);
  assert.is(actor.state, before);
  assert.is(actor.propose({ type: 'close', reason: '' }), undefined);
});

test('an actor writes the stored form under its version, and memory moves only on apply', async () => {
  const actor = new TicketActor({
    version: 1,
    machine: stored(tickets.start({ id: 't-4' })),
    status: 'open',
  });
  const next = actor.propose({ type: 'close', reason: 'done' });
  const version = await actor.persist(tx, next);
  assert.is(version, 2);
  assert.equal(actor.row.machine, tickets.persist(next as Ticket));
  assert.is(actor.row.status, 'closed');
  assert.ok(actor.state.matches('open'), 'not taken before the commit');
  actor.apply(next, version as number);
  assert.ok(actor.state.matches('closed'));
  assert.is(actor.version, 2);
});

test('an actor with nothing to write leaves its row alone; a stale one is told so', async () => {
  const actor = new TicketActor({
    version: 5,
    machine: stored(tickets.start({ id: 't-5' })),
    status: 'open',
  });
  const row = actor.row;
  assert.is(await actor.persist(tx, undefined), 5);
  assert.is(actor.row, row);
  actor.row = { ...row, version: 6 };
  assert.is(await actor.persist(tx, actor.propose({ type: 'comment' })), null);
});

test.run();
