import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Commit } from '../../actors/kernel/commit.ts';
import { ActorRegistry, type PersistentActor } from '../../actors/kernel/registry.ts';
import { ServiceError } from '../../protocol/errors.ts';
import type { Queryable, Transaction } from '../../storage/driver.ts';

/**
 * The registry on its own: a table in a Map stands for the database, so that "another
 * process" can move a row on under a copy. The real commit path is tested end to end.
 */
class Rows {
  readonly rows = new Map<string, { version: number; value: number }>();
  loads = 0;
  locks = 0;
}

class Counter implements PersistentActor<number> {
  disposed = false;
  constructor(
    private readonly rows: Rows,
    readonly id: string,
    public value: number,
    public version: number,
  ) {}
  async persist(_tx: Transaction, next: number | undefined): Promise<number | null> {
    const row = this.rows.rows.get(this.id);
    if (!row || row.version !== this.version) return null;
    if (next === undefined) return row.version;
    row.value = next;
    row.version++;
    return row.version;
  }
  apply(next: number | undefined, version: number): void {
    if (next !== undefined) this.value = next;
    this.version = version;
  }
  dispose() {
    this.disposed = true;
  }
}

/** A promise with its resolve function outside, to hold a step until the test lets it go. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

const tx = {} as Transaction;
const okCommit: Commit = async (work) => {
  const outcome = await work(tx);
  outcome.afterCommit?.();
  return outcome.result;
};

function registry(
  rows: Rows,
  options: { capacity?: number; commit?: Commit; onEvict?: (id: string) => void } = {},
  beforeLoad: () => Promise<void> = async () => undefined,
) {
  return new ActorRegistry<Counter>({
    kind: 'counter',
    load: async (id) => {
      rows.loads++;
      await beforeLoad();
      const row = rows.rows.get(id);
      return row ? new Counter(rows, id, row.value, row.version) : null;
    },
    lock: async (id) => {
      rows.locks++;
      return rows.rows.get(id)?.version ?? null;
    },
    db: () => ({}) as Queryable,
    commit: options.commit ?? okCommit,
    capacity: options.capacity ?? 10,
    ...(options.onEvict ? { onEvict: options.onEvict } : {}),
  });
}

function withRows(...ids: string[]): Rows {
  const rows = new Rows();
  for (const id of ids) rows.rows.set(id, { version: 0, value: 0 });
  return rows;
}

const increment = (counter: Counter) =>
  Promise.resolve({ result: counter.value + 1, next: counter.value + 1 });

const test = suite('actor registry');

test('concurrent gets of one id load it once', async () => {
  const held = gate();
  const rows = withRows('a');
  const actors = registry(rows, {}, () => held.opened);
  const both = Promise.all([actors.get('a'), actors.get('a')]);
  held.open();
  const [first, second] = await both;
  assert.is(rows.loads, 1);
  assert.is(first, second);
});

test('an id with nothing behind it gives null and is not kept', async () => {
  const actors = registry(withRows());
  assert.is(await actors.get('missing'), null);
  assert.is(await actors.command('missing', increment), null);
  assert.is(actors.size, 0);
});

test('commands to one actor run one at a time, in the order sent', async () => {
  const actors = registry(withRows('a'));
  const order: string[] = [];
  const held = gate();
  const first = actors.command('a', async (counter) => {
    order.push('first starts');
    await held.opened;
    order.push('first ends');
    return { result: undefined, next: counter.value + 1 };
  });
  const second = actors.command('a', async (counter) => {
    order.push(`second sees ${counter.value}`);
    return { result: undefined };
  });
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(order, ['first starts']);
  held.open();
  await Promise.all([first, second]);
  assert.equal(order, ['first starts', 'first ends', 'second sees 1']);
});

test('a command writes the row under its version and memory follows only after the commit', async () => {
  const rows = withRows('a');
  let commits = 0;
  const failing: Commit = async (work) => {
    await work(tx);
    commits++;
    throw new Error('the commit failed');
  };
  const actors = registry(rows, { commit: failing });
  const counter = (await actors.get('a')) as Counter;
  const failed = await actors.command('a', increment).catch((error: Error) => error.message);
  assert.is(failed, 'the commit failed');
  assert.is(commits, 1);
  assert.is(counter.value, 0, 'memory did not run ahead of a failed commit');
  assert.is(counter.version, 0);
});

test('a stale copy is reloaded and the command runs again, under a lock, on what the database holds', async () => {
  const rows = withRows('a');
  const actors = registry(rows);
  const counter = (await actors.get('a')) as Counter;
  // Another process moves the row on twice.
  rows.rows.set('a', { version: 2, value: 10 });
  assert.is(await actors.command('a', increment), 11);
  assert.is(rows.locks, 1, 'the first attempt took no lock; the second did');
  assert.is(rows.rows.get('a')?.value, 11, 'the newer row was built on, not overwritten');
  assert.is(rows.rows.get('a')?.version, 3);
  assert.ok(counter.disposed, 'the stale copy was let go');
  assert.is(actors.peek('a')?.value, 11);
});

test('a row that keeps moving even under the lock answers 409 conflict after the attempts, writing nothing', async () => {
  const rows = withRows('a');
  const actors = registry(rows);
  await actors.get('a');
  let runs = 0;
  const failed = await actors
    .command('a', async (counter) => {
      runs++;
      // Another writer wins every race (which the lock prevents in a real database).
      const row = rows.rows.get('a') as { version: number; value: number };
      row.version++;
      return { result: undefined, next: counter.value + 1 };
    })
    .catch((error: unknown) => error);
  assert.instance(failed, ServiceError);
  assert.is((failed as ServiceError).code, 'conflict');
  assert.is(runs, 5);
  assert.is(rows.rows.get('a')?.value, 0);
});

test('word of a newer version drops an idle copy, and marks a busy one for reloading', async () => {
  const rows = withRows('a', 'b');
  const actors = registry(rows);
  await actors.get('a');
  actors.invalidate('a', 0);
  assert.ok(actors.peek('a'), 'a notice of the version it has changes nothing');
  actors.invalidate('a', 1);
  assert.not.ok(actors.peek('a'), 'an idle stale copy is dropped');

  const held = gate();
  const running = actors.command('b', async () => {
    await held.opened;
    return { result: undefined };
  });
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  rows.rows.set('b', { version: 1, value: 5 });
  actors.invalidate('b', 1);
  assert.ok(actors.peek('b'), 'a busy copy stays until its command ends');
  held.open();
  // Its command checked the version and found it stale: it reloaded and ran again.
  await running;
  assert.is(actors.peek('b')?.value, 5);
});

test('a failing command does not block the next one', async () => {
  const actors = registry(withRows('a'));
  const failed = await actors
    .command('a', async () => {
      throw new Error('boom');
    })
    .catch((error: Error) => error.message);
  assert.is(failed, 'boom');
  assert.is(await actors.command('a', async () => ({ result: 'next' })), 'next');
});

test('past its capacity the least recently used idle actor is evicted and disposed', async () => {
  const evicted: string[] = [];
  const actors = registry(withRows('a', 'b', 'c'), {
    capacity: 2,
    onEvict: (id) => evicted.push(id),
  });
  const a = (await actors.get('a')) as Counter;
  await actors.get('b');
  await actors.get('a');
  await actors.get('c');
  assert.is(actors.size, 2);
  assert.ok(actors.peek('a'), 'a was used last-but-one, so it stays');
  assert.not.ok(actors.peek('b'), 'b was least recently used');
  assert.equal(evicted, ['b']);
  assert.not.ok(a.disposed);
});

test('a pinned actor is never evicted, nor one just loaded while every other is pinned', async () => {
  const rows = withRows('a', 'b');
  const actors = registry(rows, { capacity: 1 });
  const heldA = gate();
  const runningA = actors.command('a', async () => {
    await heldA.opened;
    return { result: undefined };
  });
  const heldB = gate();
  let inCommand: Counter | undefined;
  const runningB = actors.command('b', async (counter) => {
    inCommand = counter;
    await heldB.opened;
    return { result: undefined };
  });
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
  assert.ok(inCommand, "b's command runs although the registry is over capacity");
  assert.is(await actors.get('b'), inCommand, 'one copy of b while its command holds it');
  assert.ok(actors.peek('a'), 'a is busy and stays');
  assert.is(rows.loads, 2);
  heldA.open();
  heldB.open();
  await Promise.all([runningA, runningB]);
  assert.is(actors.size, 1, 'back under capacity once idle');
});

test('flush waits for every mailbox to drain', async () => {
  const actors = registry(withRows('a'));
  const held = gate();
  let done = false;
  void actors.command('a', async () => {
    await held.opened;
    done = true;
    return { result: undefined };
  });
  const flushed = actors.flush();
  held.open();
  await flushed;
  assert.ok(done);
});

test.run();
