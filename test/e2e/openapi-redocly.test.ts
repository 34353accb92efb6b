import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The served /openapi.json passes a second, independent validator: Redocly CLI's `lint` with
 * the repository's redocly.yaml (the `recommended` rules), with no error. The CLI runs offline:
 * telemetry and the update check are off, and a preloaded guard refuses (and reports) any
 * connection it would open, so a lint that tries to phone home fails instead of hanging.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'node_modules/@redocly/cli/bin/cli.js');
const LINT_TIME_LIMIT_MS = 120_000;

const NO_NETWORK = `
const net = require('node:net');
net.Socket.prototype.connect = function (...args) {
  process.stderr.write('NETWORK ATTEMPT ' + JSON.stringify(args[0]) + '\\n');
  process.nextTick(() => this.destroy(new Error('no network in this test')));
  return this;
};
`;

const test = suite<{ server: TestServer; dir: string }>('/openapi.json under Redocly CLI');

test.before(async (context) => {
  context.server = await startTestServer();
  context.dir = mkdtempSync(join(tmpdir(), 'openapi-redocly-'));
});
test.after(async ({ server, dir }) => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Lint {
  code: number | null;
  stdout: string;
  stderr: string;
}

function lint(file: string, guard: string): Promise<Lint> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--require',
        guard,
        CLI,
        'lint',
        '--format=json',
        `--config=${join(ROOT, 'redocly.yaml')}`,
        file,
      ],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          REDOCLY_TELEMETRY: 'off',
          REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
          NO_UPDATE_NOTIFIER: '1',
          CI: 'true',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`redocly lint did not finish in ${LINT_TIME_LIMIT_MS} ms:\n${stderr}`));
    }, LINT_TIME_LIMIT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

test('redocly lint finds no error in the served document, offline', async ({ server, dir }) => {
  const response = await server.get('/openapi.json');
  assert.is(response.status, 200);
  const file = join(dir, 'openapi.json');
  writeFileSync(file, await response.text());
  const guard = join(dir, 'no-network.cjs');
  writeFileSync(guard, NO_NETWORK);
  const result = await lint(file, guard);
  assert.not.match(result.stderr, /NETWORK ATTEMPT/, 'the CLI opened no connection');
  const report = JSON.parse(result.stdout) as {
    totals: { errors: number; warnings: number };
    problems: { ruleId: string; severity: string; message: string; location: unknown }[];
  };
  const errors = report.problems.filter((problem) => problem.severity === 'error');
  assert.equal(errors, [], 'no error');
  assert.is(report.totals.errors, 0);
  assert.is(result.code, 0, result.stderr);
});

test.run();
