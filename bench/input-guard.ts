/**
 * What the input guards (protocol/input-guard.ts: NUL, nesting, prototype keys, integer range)
 * add to decoding a request, beside the operation's zod schema alone, in one run:
 * `node --import tsx bench/input-guard.ts`. A microbenchmark of the decode step only (no I/O);
 * the whoami throughput section of `npm run bench` shows the whole request. Never fails.
 */
import { performance } from 'node:perf_hooks';
import type { z } from 'zod';
import { OPERATIONS } from '../protocol/operations.ts';
import { restParameter } from '../protocol/operation.ts';
import { decodeInput } from '../server/invoke.ts';

const CASES: [keyof typeof OPERATIONS, Record<string, unknown>][] = [
  ['whoami', {}],
  [
    'read_file',
    { workspace_id: '6f1c0a52-1b9e-4c1a-a0f4-2f6c8e9b1d20', path: 'a/b.md', version: '3' },
  ],
  ['leave_feedback', { message: 'x'.repeat(16_000), category: 'idea' }],
  [
    'post_listing',
    {
      kind: 'can',
      name: 'a listing',
      description: 'what it offers',
      dimensions: Object.fromEntries(
        Array.from({ length: 20 }, (_, i) => [`key_${i}`, ['a', 'b', i]]),
      ),
    },
  ],
];

const ROUNDS = 9;
const CALLS = 20_000;

/**
 * The median over ROUNDS of the mean time of one call of each, in microseconds. The two take
 * turns round by round, so a machine busy with other work slows both alike.
 */
function microseconds(a: () => unknown, b: () => unknown): [number, number] {
  const time = (call: () => unknown) => {
    const start = performance.now();
    for (let i = 0; i < CALLS; i++) call();
    return ((performance.now() - start) * 1000) / CALLS;
  };
  time(a);
  time(b);
  const rounds: [number[], number[]] = [[], []];
  for (let round = 0; round < ROUNDS; round++) {
    rounds[0].push(time(a));
    rounds[1].push(time(b));
  }
  const median = (values: number[]) =>
    values.sort((x, y) => x - y)[Math.floor(ROUNDS / 2)] as number;
  return [median(rounds[0]), median(rounds[1])];
}

console.log('decode step per call (median of 9 x 20,000, taking turns), µs');
console.log('operation        zod alone   with guards   added');
for (const [name, input] of CASES) {
  const operation = OPERATIONS[name];
  const schema = operation.input as z.ZodObject;
  const [alone, guarded] = microseconds(
    () => schema.safeParse(input),
    () => decodeInput(schema, input, restParameter(operation.path)),
  );
  console.log(
    `${name.padEnd(16)} ${alone.toFixed(2).padStart(9)}   ${guarded.toFixed(2).padStart(11)}   ${(guarded - alone).toFixed(2).padStart(5)}`,
  );
}
