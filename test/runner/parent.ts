import { fork, type ChildProcess } from 'node:child_process';
import type { ToParent, ToWorker } from './messages.ts';
import type { RunTotals } from './summary.ts';

/** Signals a process gets from its own runtime's fault, never from a test's code or our watchdog. */
const RUNTIME_CRASHES = new Set<string>(['SIGSEGV', 'SIGBUS', 'SIGILL', 'SIGTRAP', 'SIGABRT']);

export interface TestFile {
  path: string;
  /** As uvu names it: the path under test/. */
  name: string;
}

/**
 * Runs the files in `workers` child processes (./worker.ts), each handed the next file when it
 * is free, so the run takes about its longest share rather than its sum. With one worker its
 * output is shown as it comes; with several, each file's output is shown whole when it ends.
 *
 * A file that prints nothing for `stallSeconds` (uvu prints a mark as each test ends) has hung:
 * its worker is asked what it waits on, killed, and the file counts as failed; the run goes on
 * with the other workers (and a new one). A worker that dies fails its file the same way.
 */
export async function runInWorkers(
  files: TestFile[],
  workers: number,
  stallSeconds: number,
): Promise<RunTotals> {
  const totals: RunTotals = {
    total: 0,
    passed: 0,
    skipped: 0,
    extraFailed: 0,
    seconds: new Map(),
    postgresSkipped: [],
    clientsSkipped: [],
    ranAgainAfterCrash: [],
  };
  const queue = [...files];
  /** Files whose worker crashed once (a signal of the runtime, not of a test's own making). */
  const crashed = new Set<string>();
  const live = workers === 1;
  const print = (text: string) => process.stdout.write(text);

  const startWorker = (): Promise<void> =>
    new Promise((resolve) => {
      const child: ChildProcess = fork(new URL('./worker.ts', import.meta.url), [], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      let current: TestFile | null = null;
      let output = '';
      let lastProgress = performance.now();
      let stallReport: ((waitingOn: string[]) => void) | null = null;
      let settled = false;
      const finish = () => {
        if (settled) return;
        settled = true;
        clearInterval(watchdog);
        resolve();
      };
      const send = (message: ToWorker) => child.send(message);
      const next = () => {
        current = queue.shift() ?? null;
        output = '';
        lastProgress = performance.now();
        if (current) send({ type: 'run', path: current.path, name: current.name });
        else send({ type: 'end' });
      };
      const fail = (why: string) => {
        if (!current) return;
        print(`${live ? '' : output}\n\n${why}\n`);
        // Its tests that ended count as they ended (uvu's own totals never came); it fails.
        totals.passed += (output.match(/•/g) ?? []).length;
        totals.total += (output.match(/[•✘]/g) ?? []).length;
        totals.extraFailed += 1;
        totals.seconds.set(current.name, (performance.now() - lastProgress) / 1000);
        current = null;
      };
      const watchdog = setInterval(() => {
        if (!current || stallReport) return;
        if ((performance.now() - lastProgress) / 1000 < stallSeconds) return;
        const file = current.name;
        const marks = output.slice(output.lastIndexOf('\n') + 1);
        const ended = (marks.match(/[•✘]/g) ?? []).length;
        const report = new Promise<string[]>((answer) => {
          stallReport = answer;
          setTimeout(() => answer(['(no answer: its event loop is blocked)']), 2000);
        });
        void report.then((waitingOn) => {
          fail(
            `stalled: no test ended for ${stallSeconds} s (TEST_STALL_SECONDS) in ${file}: test ` +
              `${ended + 1} of its suite never ended; waiting on: ${waitingOn.join(', ')}`,
          );
          child.kill('SIGKILL');
        });
        send({ type: 'report' });
      }, 1000);
      child.on('message', (message: ToParent) => {
        if (message.type === 'ready') next();
        else if (message.type === 'output') {
          lastProgress = performance.now();
          output += message.text;
          if (live) print(message.text);
        } else if (message.type === 'result') {
          const { result } = message;
          print(live ? '\n' : `${output}\n`);
          totals.total += result.total;
          totals.passed += result.passed;
          totals.skipped += result.skipped;
          totals.extraFailed += result.failedToLoad;
          totals.seconds.set(result.file, result.seconds);
          next();
        } else if (message.type === 'report') stallReport?.(message.waitingOn);
        else if (message.type === 'ended') {
          totals.postgresSkipped.push(...message.postgresSkipped);
          totals.clientsSkipped.push(...message.clientsSkipped);
          finish();
        }
      });
      child.on('exit', (code, signal) => {
        if (current && signal && RUNTIME_CRASHES.has(signal) && !crashed.has(current.name)) {
          // A crash of the runtime itself (Node 24's V8 has aborted so while PGlite's Wasm was
          // let go: .ci/run): the file runs once more in a new worker, and that run counts.
          // The crash stays printed, and the summary names the file.
          crashed.add(current.name);
          totals.ranAgainAfterCrash.push(`${current.name} (${signal})`);
          print(
            `${live ? '' : output}\n\n${current.name}: its worker process crashed (${signal}): ` +
              'the file runs once more in a new worker, and that run counts\n',
          );
          queue.unshift(current);
          current = null;
        }
        if (current) fail(`${current.name}: its worker process ended (${signal ?? code})`);
        // Files left go on in a new worker.
        if (!settled && queue.length > 0) void startWorker().then(finish);
        else finish();
      });
    });

  await Promise.all(Array.from({ length: Math.min(workers, files.length) }, startWorker));
  return totals;
}
