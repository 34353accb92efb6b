import { spawn } from 'node:child_process';

/** What a python3 run printed, and how it ended. */
export interface PythonRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs Debian's python3 with only the environment given, as an agent's sandbox would (nothing
 * of the test runner's leaks in; no __pycache__ is written beside a served script), with
 * `stdin` as its input; resolves once it has exited.
 */
export function runPython(
  args: string[],
  env: Record<string, string>,
  stdin = '',
): Promise<PythonRun> {
  const child = spawn('/usr/bin/python3', args, {
    env: { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(stdin);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}
