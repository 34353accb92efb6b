import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadUws } from '../../server/http/uws-engine.ts';
import { freePort } from '../../deploy/cluster.ts';
import { startService } from '../../server/app.ts';
import { ListenError } from '../../server/listen-error.ts';
import { startServiceProcess } from '../helpers/service-process.ts';
import { startTestServer, testConfig } from '../helpers/server.ts';
import { openTestDriver, TEST_DATABASE_URL } from '../helpers/storage.ts';

/**
 * `npm start` on a port it cannot have: one line naming the port, the variable and the fix, exit
 * code 1, no stack. Every door that listens, on every HTTP engine that loads here.
 */
const DOORS = [
  { door: 'HTTP', variable: 'PORT', fix: 'PORT=0' },
  { door: 'SMTP', variable: 'SMTP_PORT', fix: 'SMTP_PORT=off' },
] as const;
const ENGINES = loadUws() ? ['node', 'uws'] : ['node'];
if (!loadUws())
  console.log('start-ports: uWebSockets.js cannot load here; the uws engine is not tried');

/** A port held by this test, on the address the service listens on. */
function holdPort(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const held = createServer();
    held.once('error', reject);
    held.listen(0, '127.0.0.1', () => resolve(held));
  });
}

/** How the service process ended when it could not listen: its exit code and its stderr. */
async function failedStart(env: Record<string, string>): Promise<{ code: string; stderr: string }> {
  const started = await startServiceProcess(env).then(
    async (service) => {
      await service.stop();
      return null;
    },
    (error: Error) => error,
  );
  assert.ok(started, 'the service started on a port it should not have had');
  const found = /^the service exited with (\S+) before listening: ([\s\S]*)$/.exec(started.message);
  assert.ok(found, started.message);
  return { code: found[1] as string, stderr: found[2] as string };
}

const test = suite('start-up on a port that is taken or forbidden');

for (const engine of ENGINES) {
  for (const { door, variable, fix } of DOORS) {
    test(`a taken ${door} port stops a start on the ${engine} engine with exit code 1 and one line naming the port, ${variable} and the fix, without a stack`, async () => {
      const held = await holdPort();
      try {
        const port = String((held.address() as { port: number }).port);
        const { code, stderr } = await failedStart({ HTTP_ENGINE: engine, [variable]: port });
        assert.is(code, '1');
        // Start-up logs may come first (timestamped); the failure is the one line after them.
        const lines = stderr.trimEnd().split('\n');
        const unlogged = lines.filter((line) => !/^\d{4}-\d\d-\d\dT/.test(line));
        assert.equal(unlogged, [lines.at(-1)], stderr);
        const line = lines.at(-1) as string;
        assert.ok(line.includes(`127.0.0.1:${port}`), line);
        assert.ok(line.includes(`(${variable})`), line);
        assert.ok(line.includes('already in use (EADDRINUSE)'), line);
        assert.ok(line.includes(`${variable}=0 for any free port`), line);
        assert.ok(line.includes(fix), line);
        assert.not.match(stderr, /^\s+at /m);
      } finally {
        await new Promise((resolve) => held.close(resolve));
      }
    });
  }
}

for (const engine of ENGINES) {
  test(`a start refused after HTTP listened (the SMTP port taken) lets go of its HTTP port on the ${engine} engine`, async () => {
    const held = await holdPort();
    const httpPort = await freePort();
    const driver = await openTestDriver(TEST_DATABASE_URL ? 'postgres' : 'pglite');
    const dataDir = mkdtempSync(join(tmpdir(), 'start-refused-'));
    try {
      const config = testConfig(dataDir, {
        httpEngine: engine as 'node' | 'uws',
        port: httpPort,
        smtpPort: (held.address() as { port: number }).port,
      });
      const refused = await startService(config, driver).then(
        async (service) => {
          await service.close();
          return null;
        },
        (error: unknown) => error,
      );
      assert.instance(refused, ListenError);
      assert.match(String(refused), /\(SMTP_PORT\)/);
      // The HTTP port is free again: another socket can take it.
      const again = createServer();
      await new Promise<void>((resolve, reject) => {
        again.once('error', reject);
        again.listen(httpPort, '127.0.0.1', () => resolve());
      });
      await new Promise((resolve) => again.close(resolve));
    } finally {
      await new Promise((resolve) => held.close(resolve));
      await driver.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}

for (const engine of ENGINES) {
  test(`a port another service holds is refused on the ${engine} engine, never shared with it`, async () => {
    // A port given by number: one the system picked (port 0) is never shared anyway.
    const first = await startTestServer({
      httpEngine: engine as 'node' | 'uws',
      port: await freePort(),
    });
    const dataDir = mkdtempSync(join(tmpdir(), 'start-shared-'));
    const driver = await openTestDriver(TEST_DATABASE_URL ? 'postgres' : 'pglite');
    try {
      const port = Number(new URL(first.baseUrl).port);
      const refused = await startService(
        testConfig(dataDir, { httpEngine: engine as 'node' | 'uws', port }),
        driver,
      ).then(
        async (service) => {
          await service.close();
          return null;
        },
        (error: unknown) => error,
      );
      assert.instance(refused, ListenError);
      assert.match(String(refused), /already in use \(EADDRINUSE\)/);
    } finally {
      await first.close();
      await driver.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}

test('a start names both ports it listens on in its "listening on" line', async () => {
  const service = await startServiceProcess();
  try {
    const line = /listening on .*/.exec(service.stderr())?.[0] ?? '';
    assert.match(line, new RegExp(`^listening on ${service.baseUrl} \\(`));
    assert.match(line, /, mail door on 127\.0\.0\.1:\d+$/);
  } finally {
    await service.stop();
  }
});

test('a forbidden port (below 1024, not root) stops a start with the reason EACCES', async () => {
  if (process.getuid?.() === 0) {
    console.log(
      'start-ports: running as root, every port is allowed: the EACCES case is not tried',
    );
    return;
  }
  const { code, stderr } = await failedStart({ PORT: '1' });
  assert.is(code, '1');
  assert.match(stderr.trimEnd().split('\n').at(-1) as string, /127\.0\.0\.1:1 \(PORT\).*EACCES/);
});

test('a setting that cannot be read stops a start with exit code 1 and one line naming it, without a stack', async () => {
  for (const [env, named] of [
    [{ FORWARDER_FACTORY_ADDRESS: 'factory' }, 'FORWARDER_FACTORY_ADDRESS must be an address'],
    [{ HTTP_ENGINE: 'fast' }, 'HTTP_ENGINE must be uws, node or auto'],
    [{ CONFIRMATIONS: '-1' }, 'CONFIRMATIONS must be a whole number'],
  ] as const) {
    const { code, stderr } = await failedStart(env);
    assert.is(code, '1', stderr);
    const lines = stderr.trimEnd().split('\n');
    assert.is(lines.length, 1, stderr);
    assert.ok(lines[0]?.startsWith(`cannot start: ${named}`), stderr);
    assert.not.match(stderr, /^\s+at /m);
  }
});

test('with no public mail domain, /llms.txt says the sign-up address reaches the mail door only from this machine', async () => {
  const server = await startTestServer();
  try {
    const text = await (await server.get('/llms.txt')).text();
    assert.ok(text.includes('to join@127.0.0.1,'), 'the sign-up address is named');
    assert.ok(text.includes('no public mail domain'), text);
    assert.ok(text.includes('only from the machine it runs on'), text);
  } finally {
    await server.close();
  }
});

test('with MAIL_DOMAIN set, /llms.txt names its sign-up address and no warning', async () => {
  const server = await startTestServer({ mailDomain: 'mail.example.org' });
  try {
    const text = await (await server.get('/llms.txt')).text();
    assert.ok(text.includes('to join@mail.example.org,'), 'the sign-up address is named');
    assert.not.ok(text.includes('no public mail domain'), text);
  } finally {
    await server.close();
  }
});

test.run();
