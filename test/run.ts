/**
 * Runs every `*.test.ts` under test/ (or the files named on the command line) with uvu, then
 * prints `N passed, N failed` as the last line, which CI reads. Suites that need PostgreSQL
 * (test/helpers/storage.ts, postgresSuite) are counted when skipped for want of DATABASE_URL;
 * with REQUIRE_POSTGRES=1 each skipped one counts as failed. Suites that need a real client
 * installed outside npm (test/helpers/real-clients.ts) are reported the same way, and fail the
 * run when REQUIRE_CLIENTS=1.
 */
import { readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(import.meta.dirname);

function findTests(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return findTests(path);
      return name.endsWith('.test.ts') ? [path] : [];
    });
}

// Arguments name test files or folders; none means every test.
const files =
  process.argv.length > 2
    ? process.argv.slice(2).flatMap((arg) => {
        const path = resolve(arg);
        return statSync(path).isDirectory() ? findTests(path) : [path];
      })
    : findTests(root);
const only = process.env.TEST_ONLY;

const globals = globalThis as unknown as {
  UVU_DEFER: number;
  UVU_QUEUE: unknown[][];
  UVU_INDEX: number;
};
globals.UVU_DEFER = 1;
globals.UVU_QUEUE = [];
for (const [index, file] of files.entries()) {
  if (only && !file.includes(only)) continue;
  globals.UVU_QUEUE.push([relative(root, file)]);
  globals.UVU_INDEX = globals.UVU_QUEUE.length - 1;
  await import(pathToFileURL(file).href);
  void index;
}

// uvu prints its own totals; read them back to print the line CI understands.
const { exec } = await import('uvu');
let printed = '';
// When uvu began each file (it prints the file's name first): the slowest are named at the end,
// so that time spent in the suite can be found without a profiler.
const fileStarts: { file: string; at: number }[] = [];
// When anything was last printed, for the watchdog below.
let lastProgress = performance.now();
const stallSeconds = Number(process.env.TEST_STALL_SECONDS || 600);
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
  printed += text;
  // eslint-disable-next-line no-control-regex -- uvu colours the file name
  const file = /^(\S+\.test\.ts)\n$/.exec(text.replace(/\u001b\[[0-9;]*m/g, ''))?.[1];
  if (file) fileStarts.push({ file, at: performance.now() });
  lastProgress = performance.now();
  return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
}) as typeof process.stdout.write;

// A test that never ends must not hold the run until CI's own limit: when nothing has been
// printed (uvu prints a mark as each test ends) for TEST_STALL_SECONDS, the run stops here,
// naming the file and the test that hung and what it was waiting on, and counts it as failed.
const watchdog = setInterval(() => {
  if ((performance.now() - lastProgress) / 1000 < stallSeconds) return;
  // eslint-disable-next-line no-control-regex -- uvu colours its marks
  const text = printed.replace(/\u001b\[[0-9;]*m/g, '');
  const file = fileStarts.at(-1)?.file ?? '(before the first file)';
  const suiteLine = text.slice(text.lastIndexOf('\n') + 1);
  const ended = (suiteLine.match(/[•✘]/g) ?? []).length;
  const passedSoFar = (text.match(/•/g) ?? []).length;
  const failedSoFar = (text.match(/✘/g) ?? []).length;
  write(
    `\n\nstalled: no test ended for ${stallSeconds} s (TEST_STALL_SECONDS) in ${file}: ` +
      `test ${ended + 1} of "${suiteLine.replace(/[•✘\s]+$/, '').trim()}" never ended\n` +
      `waiting on: ${process.getActiveResourcesInfo().join(', ')}\n` +
      `${passedSoFar} passed, ${failedSoFar + 1} failed\n`,
  );
  process.exit(1);
}, 1000);
watchdog.unref();
await exec();
clearInterval(watchdog);
process.stdout.write = write;
const ended = performance.now();
const slowest = fileStarts
  .map(({ file, at }, i) => ({ file, seconds: ((fileStarts[i + 1]?.at ?? ended) - at) / 1000 }))
  .sort((a, b) => b.seconds - a.seconds)
  .slice(0, 12);
if (fileStarts.length > 1) {
  console.log(
    `slowest files: ${slowest.map(({ file, seconds }) => `${file} ${seconds.toFixed(1)} s`).join(', ')}`,
  );
}

// eslint-disable-next-line no-control-regex -- stripping ANSI colour codes is the point
const plain = printed.replace(/\u001b\[[0-9;]*m/g, '');
const total = Number(/Total:\s+(\d+)/.exec(plain)?.[1] ?? 0);
const passed = Number(/Passed:\s+(\d+)/.exec(plain)?.[1] ?? 0);
const skipped = Number(/Skipped:\s+(\d+)/.exec(plain)?.[1] ?? 0);
let failed = total - passed - skipped;
const { closeTestResources } = await import('./helpers/resources.ts');
await closeTestResources();

// Suites that need PostgreSQL never skip silently; under REQUIRE_POSTGRES=1 a skip fails.
const { postgresSuitesSkipped } = await import('./helpers/storage.ts');
const notRun = postgresSuitesSkipped();
if (notRun.length > 0) {
  const required = process.env.REQUIRE_POSTGRES === '1';
  console.log(
    `${notRun.length} PostgreSQL suite${notRun.length === 1 ? '' : 's'} skipped: DATABASE_URL is not set` +
      (required ? ' and REQUIRE_POSTGRES=1, so each counts as failed' : '') +
      ` (${notRun.join('; ')})`,
  );
  if (required) failed += notRun.length;
}

// Suites that drive a real third-party client (rclone, the Python SDKs) never skip silently
// either; `.ci/run` installs the clients and sets REQUIRE_CLIENTS=1.
const { clientSuitesSkipped } = await import('./helpers/real-clients.ts');
const clientsMissing = clientSuitesSkipped();
if (clientsMissing.length > 0) {
  const required = process.env.REQUIRE_CLIENTS === '1';
  console.log(
    `${clientsMissing.length} real-client suite${clientsMissing.length === 1 ? '' : 's'} skipped` +
      (required ? ' and REQUIRE_CLIENTS=1, so each counts as failed' : '') +
      ` (${clientsMissing.join('; ')})`,
  );
  if (required) failed += clientsMissing.length;
}
// uvu's own "Skipped:" above counts skipped tests only; whole suites skipped for want of
// PostgreSQL or a client count here too, unless they were required (then they failed).
const suitesSkipped =
  (process.env.REQUIRE_POSTGRES === '1' ? 0 : notRun.length) +
  (process.env.REQUIRE_CLIENTS === '1' ? 0 : clientsMissing.length);
const skips = [
  ...(skipped ? [`${skipped} test${skipped === 1 ? '' : 's'}`] : []),
  ...(suitesSkipped ? [`${suitesSkipped} suite${suitesSkipped === 1 ? '' : 's'}`] : []),
];
console.log(
  `${passed} passed, ${failed} failed${skips.length ? `, skipped ${skips.join(' and ')}` : ''}`,
);
process.exit(failed > 0 || total === 0 ? 1 : 0);
