/**
 * Runs every `*.test.ts` under test/ (or the files and folders named on the command line) with
 * uvu, in TEST_WORKERS child processes (default: one per core), then prints
 * `N passed, N failed` as the last line, which CI reads (./runner/summary.ts). Suites that need
 * PostgreSQL (test/helpers/storage.ts, postgresSuite) are counted when skipped for want of
 * DATABASE_URL; with REQUIRE_POSTGRES=1 each skipped one counts as failed. Suites that need a
 * real client installed outside npm (test/helpers/real-clients.ts) are reported the same way,
 * and fail the run when REQUIRE_CLIENTS=1. A file in which no test ends for TEST_STALL_SECONDS
 * (600) fails, naming what it waited on, and the run goes on (./runner/parent.ts).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { runInWorkers, type TestFile } from './runner/parent.ts';
import { printSummary } from './runner/summary.ts';

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
const paths =
  process.argv.length > 2
    ? process.argv.slice(2).flatMap((arg) => {
        const path = resolve(arg);
        return statSync(path).isDirectory() ? findTests(path) : [path];
      })
    : findTests(root);
const only = process.env.TEST_ONLY;
const files: TestFile[] = paths
  .filter((path) => !only || path.includes(only))
  .map((path) => ({ path, name: relative(root, path) }));

// The longest files first, so that no worker is left with a long one at the end: as long as
// they took last time on this machine, else by their size.
const secondsFile = join(tmpdir(), 'agent-service-test-seconds.json');
let lastSeconds: Record<string, number> = {};
try {
  lastSeconds = JSON.parse(readFileSync(secondsFile, 'utf8')) as Record<string, number>;
} catch {
  lastSeconds = {};
}
const weight = (file: TestFile) => lastSeconds[file.name] ?? statSync(file.path).size / 1000;
files.sort((a, b) => weight(b) - weight(a));

// Suites that start the service as `npm start` does run the built JavaScript
// (test/helpers/service-process.ts): bring it up to date first, once for every worker.
execFileSync(process.execPath, [join(root, '../deploy/build.mjs')], { stdio: 'inherit' });

const workers = Math.max(1, Number(process.env.TEST_WORKERS) || availableParallelism());
const stallSeconds = Number(process.env.TEST_STALL_SECONDS) || 600;
const started = performance.now();
const totals = await runInWorkers(files, workers, stallSeconds);
writeFileSync(
  secondsFile,
  JSON.stringify({ ...lastSeconds, ...Object.fromEntries(totals.seconds) }),
);
console.log(
  `${files.length} files in ${((performance.now() - started) / 1000).toFixed(0)} s on ${Math.min(workers, files.length)} worker${workers === 1 ? '' : 's'}`,
);
process.exit(printSummary(totals));
