import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

/**
 * `npm start` on each Node.js at hand: the Node running the tests, and Node 24 from npm's
 * `node@24` package when NODE24_BIN names its binary (.ci/run installs it). Where uWebSockets.js
 * has no binary (Node 22 and 24), the start says which engine runs and why in one log line;
 * uWS's own "not compatible" warning and its require stack never reach the output.
 */
const root = join(import.meta.dirname, '../..');
// What `npm start` runs: the built JavaScript (test/run.ts builds it before any test).
const main = join(root, 'build/server/main.js');

const nodes = new Map<string, string>([[realpathSync(process.execPath), 'this Node.js']]);
const node24 = process.env.NODE24_BIN;
if (node24) nodes.set(realpathSync(node24), 'Node 24 (NODE24_BIN)');
else if (process.versions.node.split('.')[0] !== '24')
  console.log(
    'start-node-versions: NODE24_BIN is not set, so Node 24 is not tried (`npm install --prefix DIR node@24`, ' +
      'then NODE24_BIN=DIR/node_modules/.bin/node; .ci/run does this)',
  );

/** The Node.js version and module ABI of a node binary. */
function versionOf(node: string): { version: string; abi: string } {
  const [version, abi] = execFileSync(node, [
    '-p',
    'process.version + " " + process.versions.modules',
  ])
    .toString()
    .trim()
    .split(' ');
  return { version: (version as string).slice(1), abi: abi as string };
}

/** Everything a start on `node` prints (stdout and stderr) up to its "listening on" line. */
async function startOutput(node: string): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-service-node-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    HTTP_ENGINE: 'auto',
  };
  // The engine line is the subject, not the storage: PGlite, whatever the run's database.
  delete env.DATABASE_URL;
  const child = spawn(node, ['--max-semi-space-size=8', main], { cwd: root, env });
  let output = '';
  const exited = new Promise<number | string | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  );
  try {
    return await new Promise<string>((resolve, reject) => {
      const read = (chunk: Buffer) => {
        output += chunk.toString();
        if (/listening on .*\n/.test(output)) resolve(output);
      };
      child.stdout.on('data', read);
      child.stderr.on('data', read);
      void exited.then((code) =>
        reject(new Error(`exited with ${code} before listening: ${output}`)),
      );
    });
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const test = suite('start-up on each Node.js: the HTTP engine and why, in one line');

for (const [node, name] of nodes) {
  test(`a start on ${name} prints only log lines, and one "http engine" line naming node:http and the missing uWS binary when uWS does not load`, async () => {
    const { version, abi } = versionOf(node);
    const output = await startOutput(node);
    const lines = output.trimEnd().split('\n');
    // Every line is the service's own log (timestamped): no warning, stack or blank line of uWS.
    const unlogged = lines.filter((line) => !/^\d{4}-\d\d-\d\dT\S+ /.test(line));
    assert.equal(unlogged, [], output);
    assert.not.match(output, /µWS|not compatible|Falling back|Require stack/, output);
    const engine = /listening on \S+ \((uws|node), /.exec(output)?.[1];
    assert.ok(engine, output);
    const engineLines = lines.filter((line) => line.includes('http engine:'));
    if (engine === 'uws') {
      assert.equal(engineLines, [], output);
    } else {
      assert.is(engineLines.length, 1, output);
      assert.match(
        engineLines[0] as string,
        ` http engine: node:http (uWebSockets.js has no binary for Node ${version} on ${process.platform}-${process.arch}, ABI ${abi})`,
      );
    }
    console.log(`start-node-versions: Node ${version} (ABI ${abi}) serves with ${engine}`);
  });
}

/** What a start with HTTP_ENGINE=uws on `node` prints before it exits, and its exit code. */
async function uwsRequired(node: string): Promise<{ code: number | null; output: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-service-node-'));
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', SMTP_PORT: 'off', DATA_DIR: dataDir };
  env.HTTP_ENGINE = 'uws';
  delete env.DATABASE_URL;
  const child = spawn(node, ['--max-semi-space-size=8', main], { cwd: root, env });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code, output };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

for (const [node, name] of nodes) {
  test(`HTTP_ENGINE=uws on ${name}, where uWS does not load, stops the start with one line saying why and what to set, exit code 1`, async () => {
    const { version } = versionOf(node);
    if (version.split('.')[0] === '20') {
      console.log(
        `start-node-versions: uWS loads on Node ${version}: HTTP_ENGINE=uws starts there`,
      );
      return;
    }
    const { code, output } = await uwsRequired(node);
    assert.is(code, 1, output);
    const unlogged = output
      .trimEnd()
      .split('\n')
      .filter((line) => !/^\d{4}-\d\d-\d\dT\S+ /.test(line));
    assert.equal(unlogged.length, 1, output);
    assert.match(
      unlogged[0] as string,
      /^cannot start: HTTP_ENGINE=uws, but uWebSockets\.js has no binary for Node /,
    );
    assert.match(unlogged[0] as string, /set HTTP_ENGINE=auto/);
    assert.not.match(output, /^\s+at /m);
  });
}

test.run();
