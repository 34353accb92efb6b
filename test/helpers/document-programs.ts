import { spawn } from 'node:child_process';

/**
 * Programs the served documents give their readers (a receipt verifier, request signers), as a
 * test takes them: the code block exactly as served, run as a program the way a reader who
 * pasted it would.
 */

/** The code block of `language` in `document` (named `where` in the error) that starts with `marker`. */
export function codeBlock(
  document: string,
  language: string,
  marker: string,
  where: string,
): string {
  for (const match of document.matchAll(/```(\w+)\n([\s\S]*?)```/g)) {
    if (match[1] === language && (match[2] as string).startsWith(marker)) return match[2] as string;
  }
  throw new Error(`${where} holds no ${language} code block starting with ${marker}`);
}

/** A program run to its end: its exit code and what it printed. */
export interface ProgramRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command` with `args` to its end, in an environment holding only PATH, HOME and `env`
 * (so that nothing of the test's own environment helps the program along).
 */
export function runProgram(
  command: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<ProgramRun> {
  const child = spawn(command, [...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
