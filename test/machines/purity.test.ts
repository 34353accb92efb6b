import { join } from 'node:path';
import { ESLint } from 'eslint';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

// The machines are pure because lint refuses the impure; this holds lint to that.
const eslint = new ESLint({ cwd: join(import.meta.dirname, '../..') });

/** What lint says of `code` as if it were a file of machines/: one `rule: name` per problem. */
async function problems(code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: 'machines/probe.ts' });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${/'([^']+)'/.exec(m.message)?.[1]}`);
}

const test = suite('machines/ stay pure');

test('a machine may not read the time, draw chance or set a timer', async () => {
  const found = await problems(
    [
      'export const a = Date.now();',
      'export const b = performance.now();',
      'export const c = Math.random();',
      'setTimeout(() => 1, 1);',
      'setInterval(() => 1, 1);',
      'setImmediate(() => 1);',
      'queueMicrotask(() => 1);',
      'export const d = globalThis;',
    ].join('\n'),
  );
  assert.equal(found, [
    'no-restricted-globals: Date',
    'no-restricted-globals: performance',
    'no-restricted-properties: Math.random',
    'no-restricted-globals: setTimeout',
    'no-restricted-globals: setInterval',
    'no-restricted-globals: setImmediate',
    'no-restricted-globals: queueMicrotask',
    'no-restricted-globals: globalThis',
  ]);
});

test('a machine may not reach the network, the environment or crypto', async () => {
  const found = await problems(
    [
      "void fetch('http://example.test');",
      'export const e = process.env.HOME;',
      'export const f = crypto.randomUUID();',
      "import { randomUUID } from 'node:crypto';",
      "import { createHash } from 'crypto';",
      "import { setTimeout as later } from 'timers/promises';",
      'export { randomUUID, createHash, later };',
    ].join('\n'),
  );
  assert.equal(found.sort(), [
    'no-restricted-globals: crypto',
    'no-restricted-globals: fetch',
    'no-restricted-globals: process',
    'no-restricted-imports: crypto',
    'no-restricted-imports: node:crypto',
    'no-restricted-imports: timers/promises',
  ]);
});

test('a machine imports xstate and protocol/, and nothing of actors/, storage/ or server/', async () => {
  const found = await problems(
    [
      "import { setup } from 'xstate';",
      "import type { ChangeEvent } from '../protocol/events.ts';",
      "import type { Clock } from '../actors/clock.ts';",
      "import type { Driver } from '../storage/driver.ts';",
      "import type { Config } from '../server/config.ts';",
      'export type { ChangeEvent, Clock, Driver, Config };',
      'export { setup };',
    ].join('\n'),
  );
  assert.equal(found, [
    'no-restricted-imports: ../actors/clock.ts',
    'no-restricted-imports: ../storage/driver.ts',
    'no-restricted-imports: ../server/config.ts',
  ]);
});

test('the machines as they are pass', async () => {
  const results = await eslint.lintFiles(['machines/**/*.ts']);
  assert.ok(results.length > 0, 'there are machines to lint');
  assert.equal(
    results.flatMap((r) => r.messages.map((m) => `${r.filePath}:${m.line} ${m.message}`)),
    [],
  );
});

test.run();
