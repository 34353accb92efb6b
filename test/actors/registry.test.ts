import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ActorRegistry } from '../../actors/registry.ts';

class Counter {
  value = 0;
  disposed = false;
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

const test = suite('actor registry');

test('concurrent gets of one id load it once', async () => {
  let loads = 0;
  const held = gate();
  const registry = new ActorRegistry<Counter>(async () => {
    loads++;
    await held.opened;
    return new Counter();
  }, 10);
  const both = Promise.all([registry.get('a'), registry.get('a')]);
  held.open();
  const [first, second] = await both;
  assert.is(loads, 1);
  assert.is(first, second);
});

test('an id with nothing behind it gives null and is not kept', async () => {
  const registry = new ActorRegistry<Counter>(async () => null, 10);
  assert.is(await registry.get('missing'), null);
  assert.is(await registry.send('missing', () => 1), null);
  assert.is(registry.size, 0);
});

test('commands to one actor run one at a time, in the order sent', async () => {
  const registry = new ActorRegistry<Counter>(async () => new Counter(), 10);
  const order: string[] = [];
  const held = gate();
  const first = registry.send('a', async (actor) => {
    order.push('first starts');
    await held.opened;
    actor.value++;
    order.push('first ends');
  });
  const second = registry.send('a', (actor) => {
    order.push(`second sees ${actor.value}`);
  });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(order, ['first starts']);
  held.open();
  await Promise.all([first, second]);
  assert.equal(order, ['first starts', 'first ends', 'second sees 1']);
});

test('a failing command does not block the next one', async () => {
  const registry = new ActorRegistry<Counter>(async () => new Counter(), 10);
  const failed = await registry
    .send('a', () => {
      throw new Error('boom');
    })
    .catch((error: Error) => error.message);
  assert.is(failed, 'boom');
  assert.is(await registry.send('a', () => 'next'), 'next');
});

test('past its capacity the least recently used idle actor is evicted and disposed', async () => {
  const evicted: string[] = [];
  const registry = new ActorRegistry<Counter>(
    async () => new Counter(),
    2,
    (id) => evicted.push(id),
  );
  const a = (await registry.get('a')) as Counter;
  await registry.get('b');
  await registry.get('a');
  await registry.get('c');
  assert.is(registry.size, 2);
  assert.ok(registry.peek('a'), 'a was used last-but-one, so it stays');
  assert.not.ok(registry.peek('b'), 'b was least recently used');
  assert.equal(evicted, ['b']);
  assert.not.ok(a.disposed);
});

test('a busy actor is not evicted', async () => {
  const registry = new ActorRegistry<Counter>(async () => new Counter(), 1);
  const held = gate();
  const running = registry.send('a', () => held.opened);
  await new Promise((resolve) => setImmediate(resolve));
  await registry.get('b');
  assert.ok(registry.peek('a'), 'a is busy and stays');
  held.open();
  await running;
});

test('flush waits for every mailbox to drain', async () => {
  const registry = new ActorRegistry<Counter>(async () => new Counter(), 10);
  const held = gate();
  let done = false;
  void registry.send('a', async () => {
    await held.opened;
    done = true;
  });
  const flushed = registry.flush();
  held.open();
  await flushed;
  assert.ok(done);
});

test.run();
