import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { holdHeaderThread, readHeaderOffLoop } from '../../actors/index/header-thread.ts';
import { indexEntry, indexEntryHere } from '../../actors/index/capture.ts';
import { HEADER_LIMITS, readHeader } from '../../actors/index/yaml-header.ts';
import { INDEX_FIELDS_MAX_BYTES } from '../../storage/index/file-index.ts';

const lines = (count: number, line: (index: number) => string) =>
  Array.from({ length: count }, (_, index) => line(index)).join('\n');

const errorOf = (source: string) => {
  const reading = readHeader(source);
  return 'error' in reading ? reading.error : 'read';
};

test('an ordinary header reads as before: scalars, lists, nested mappings, anchors within bounds', () => {
  assert.equal(readHeader('name: Bike repair\nprice: 40\ntags: [a, b]\nat: {city: Berlin}\n'), {
    fields: { name: 'Bike repair', price: 40, tags: ['a', 'b'], at: { city: 'Berlin' } },
  });
  assert.equal(readHeader('base: &b {x: 1}\ncopy: *b\nlabel: !!str 12\n'), {
    fields: { base: { x: 1 }, copy: { x: 1 }, label: '12' },
  });
});

test('text the database cannot hold (a lone surrogate, NUL) made by YAML escapes is refused, naming the field', () => {
  assert.match(errorOf('k: "a\\ud800b"\n'), /field k: holds a lone UTF-16 surrogate/);
  assert.match(
    errorOf('k: {deep: ["\\udc00"]}\n'),
    /field k\.deep\.0: holds a lone UTF-16 surrogate/,
  );
  assert.match(errorOf('"a\\0": 1\n'), /holds NUL/);
  assert.equal(readHeader('k: "\\ud83d\\ude00"\n'), { fields: { k: '\u{1F600}' } });
});

test('duplicate keys are found at every level, without the quadratic check', () => {
  assert.match(errorOf('a: 1\nb: 2\na: 3\n'), /not valid: Map keys must be unique \(`a`/);
  assert.match(errorOf('a: {x: 1, y: 2, x: 3}\n'), /Map keys must be unique \(`x`/);
  assert.match(errorOf('a:\n  - {k: 1}\n  - k: 1\n    k: 2\n'), /Map keys must be unique \(`k`/);
  // As the yaml package has it: the number 1 and the string "1" are different keys.
  assert.equal(readHeader('1: a\n"2": b\n'), { fields: { 1: 'a', 2: 'b' } });
});

test('each bound is named: bytes, top-level keys (block and flow), depth, anchors, aliases, tags', () => {
  const bigValue = `k: ${'x'.repeat(HEADER_LIMITS.bytes)}`;
  assert.match(errorOf(bigValue), /at most 65536 bytes/);
  assert.match(errorOf(lines(1001, (i) => `k${i}: v`)), /more than 1000 top-level keys/);
  assert.is(errorOf(lines(1000, (i) => `k${i}: v`)), 'read');
  assert.match(
    errorOf(`{${lines(1001, (i) => `k${i}: 1,`).replaceAll('\n', ' ')} last: 1}`),
    /more than 1000 top-level keys/,
  );
  assert.match(errorOf(`k: ${'['.repeat(33)}${']'.repeat(33)}`), /more than 32 levels/);
  assert.match(errorOf(`k:\n${'  - '.repeat(1)}${'- '.repeat(40)}x`), /more than 32 levels/);
  assert.match(errorOf(lines(101, (i) => `a${i}: &x${i} v`)), /more than 100 anchors/);
  assert.match(errorOf(`a: &x v\n${lines(101, (i) => `b${i}: *x`)}`), /more than 100 aliases/);
  assert.match(errorOf(`k:\n${lines(1001, () => '  - !!str v')}`), /more than 1000 tags/);
});

/** The issue's header: one anchored list of `items` items, then `aliases` aliases of it. */
const aliasBomb = (items: number, aliases: number) =>
  [
    `a0: &a [${Array.from({ length: items }, () => 'x').join(',')}]`,
    ...Array.from({ length: aliases }, (_, i) => `a${i + 1}: *a`),
  ].join('\n');

test("the issue's alias bomb (40 KB, 99 aliases of a 20,000-item list) is refused naming the 256 KiB bound of stored fields", () => {
  const bomb = aliasBomb(20_000, 99);
  assert.is(Buffer.byteLength(bomb) < HEADER_LIMITS.bytes, true);
  assert.match(errorOf(bomb), /expands to more than 262144 bytes as JSON .* at most 262144 bytes/);
  assert.is(INDEX_FIELDS_MAX_BYTES, 262144);
  // The same list aliased a few times stays within the bound and reads.
  assert.is(errorOf(aliasBomb(2_000, 3)), 'read');
});

test('aliases are counted as all they repeat before anything is built: 2^40 values from nested aliases are refused at once', () => {
  const levels = [`l0: &l0 [x, x]`];
  for (let i = 1; i <= 40; i++) levels.push(`l${i}: &l${i} [*l${i - 1}, *l${i - 1}]`);
  assert.match(errorOf(levels.join('\n').replace(/^l40: &l40/m, 'l40:')), /expands to more than/);
});

test('the values of a header are bounded with its aliases resolved, and so is its nesting', () => {
  // 99 aliases of a list of 1,100 one-digit numbers: 220 KB of JSON, but 110,000 values.
  const lists = Array.from({ length: 1_100 }, () => '1').join(',');
  const many = `a0: &a [${lists}]\n${lines(99, (i) => `a${i + 1}: *a`)}`;
  assert.match(errorOf(many), /more than 100000 values/);
  // Each anchor 20 levels deep wrapping the one before: 5 of them nest 100 levels.
  const deep = [`l0: &l0 ${'['.repeat(20)}x${']'.repeat(20)}`];
  for (let i = 1; i < 5; i++)
    deep.push(`l${i}: &l${i} ${'['.repeat(20)}*l${i - 1}${']'.repeat(20)}`);
  assert.match(errorOf(deep.join('\n')), /more than 32 levels deep/);
});

test('merge keys, binary scalars and an alias inside its own node are bounded or refused', () => {
  const merged = `%YAML 1.1\n---\nbase: &b {${lines(2_000, (i) => `k${i}: ${'v'.repeat(10)}`).replaceAll('\n', ', ')}}\n${lines(99, (i) => `m${i}: {<<: *b}`)}`;
  assert.match(errorOf(merged), /expands to more than 262144 bytes/);
  // A binary scalar is measured as the JSON it becomes (an array of numbers), not its base64:
  // 30,000 bytes are 40 KB of text and 120 KB of JSON, three times over.
  const binary = `b: &b !!binary ${Buffer.alloc(30_000, 200).toString('base64')}\nc: *b\nd: *b`;
  assert.match(errorOf(binary), /expands to more than 262144 bytes/);
  assert.match(errorOf('a: &a [1, *a]\n'), /the alias \*a is inside the node it names/);
});

test('the headers of the issue are refused on their size before any parsing', async () => {
  const keys = lines(30_000, (i) => `k${i}: v`);
  const file = Buffer.from(`---\n${keys}\n---\nbody\n`);
  const entry = await indexEntry(file, file.length);
  assert.match('error' in entry ? entry.error : 'read', /is 288889 bytes; .* at most 65536 bytes/);
});

test('a small header is read where it is asked, a large one on the header thread, with the same result', async () => {
  const small = Buffer.from('---\nname: a\n---\nbody\n');
  assert.equal(await indexEntry(small, small.length), {
    fields: { name: 'a' },
    body: 'body\n',
    convention: null,
  });
  const source = lines(900, (i) => `key${i}: ${'x'.repeat(60)}`);
  const large = Buffer.from(`---\n${source}\n---\nbody\n`);
  assert.equal(await indexEntry(large, large.length), indexEntryHere(large, large.length));
  assert.equal(await readHeaderOffLoop(source), readHeader(source));
});

test('a header that passes its deadline on the thread answers an error naming it, and the next one is read by a fresh thread', async () => {
  const hold = holdHeaderThread(50);
  const next = readHeaderOffLoop('name: after\n');
  await hold.queuedBehind;
  const held = await hold.done;
  assert.match('error' in held ? held.error : 'read', /longer than 50 ms/);
  assert.equal(await next, { fields: { name: 'after' } });
});

test.run();
