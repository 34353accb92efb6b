import { pathToFileURL } from 'node:url';
import './uvu-defer.ts';

/** What one test file did: its output (uvu's totals taken out) and its counts. */
export interface FileResult {
  file: string;
  output: string;
  total: number;
  passed: number;
  skipped: number;
  /** 1 when the file could not be loaded at all (then its tests never ran). */
  failedToLoad: number;
  seconds: number;
}

const globals = globalThis as unknown as { UVU_QUEUE: unknown[][]; UVU_INDEX: number };
// Loaded after ./uvu-defer.ts: uvu queues suites for `exec` rather than running each at once.
const { exec } = await import('uvu');

// eslint-disable-next-line no-control-regex -- uvu colours its output
const plain = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, '');

/**
 * Runs one test file with uvu in this process: its suites are queued as it is imported
 * (UVU_DEFER) and run by `exec`. What it prints goes to `emit` as it comes, but for uvu's
 * totals, which are read into the counts.
 */
export async function runFile(
  path: string,
  name: string,
  emit: (text: string) => void,
): Promise<FileResult> {
  const result: FileResult = {
    file: name,
    output: '',
    total: 0,
    passed: 0,
    skipped: 0,
    failedToLoad: 0,
    seconds: 0,
  };
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    const totals = /^\n {2}(Total|Passed|Skipped|Duration):\s+(\S+)/.exec(plain(text));
    if (totals) {
      const value = Number(totals[2]);
      if (totals[1] === 'Total') result.total = value;
      if (totals[1] === 'Passed') result.passed = value;
      if (totals[1] === 'Skipped') result.skipped = value;
      return true;
    }
    result.output += text;
    emit(text);
    return true;
  }) as typeof process.stdout.write;
  const started = performance.now();
  try {
    globals.UVU_QUEUE = [[name]];
    globals.UVU_INDEX = 0;
    await import(pathToFileURL(path).href);
    await exec();
  } catch (error) {
    result.failedToLoad = 1;
    const text = `\n${name} could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`;
    result.output += text;
    emit(text);
  } finally {
    process.stdout.write = write;
    result.seconds = (performance.now() - started) / 1000;
  }
  return result;
}
