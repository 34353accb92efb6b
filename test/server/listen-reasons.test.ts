import { spawn } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort } from '../../deploy/cluster.ts';
import { createUwsEngine } from '../../server/http/uws-engine.ts';
import { loadUwsBinary } from '../../server/http/uws-load.ts';
import { ephemeralPortRange, ListenError } from '../../server/listen-error.ts';

/**
 * Why a start could not listen is always said, and the local cluster's processes keep ports no
 * other socket of the machine is lent while they restart (`cannot listen on 127.0.0.1:45695`,
 * with no reason, right after a SIGTERM: issue 33).
 */
const test = suite('a failed listen always says why; cluster ports are never lent to others');

test("freePort hands out ports outside the system's ephemeral range, which no socket is given unasked", async () => {
  const range = ephemeralPortRange();
  if (!range) {
    console.log('listen-reasons: no /proc/sys/net/ipv4/ip_local_port_range here: not tried');
    return;
  }
  for (let i = 0; i < 50; i++) {
    const port = await freePort();
    assert.ok(port < range[0] || port > range[1], `${port} is in ${range[0]}-${range[1]}`);
  }
});

test('a port taken in the ephemeral range is named as such in the start-up line, with the fix', () => {
  const range = ephemeralPortRange();
  if (!range) return;
  const taken = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
  const inside = new ListenError('HTTP', '127.0.0.1', range[0], taken).message;
  assert.match(inside, `(EADDRINUSE), and ${range[0]}-${range[1]} is the system's ephemeral range`);
  assert.match(inside, 'pick a port outside it');
  const outside = new ListenError('HTTP', '127.0.0.1', range[0] - 1, taken).message;
  assert.not.match(outside, 'ephemeral');
});

test('the uWS engine, on a port another process holds for moments, fails only with a reason (an errno, or words that say the port was held for moments)', async () => {
  const { uws, reason } = loadUwsBinary();
  if (!uws) {
    console.log(`listen-reasons: the uWS case is not tried (${reason})`);
    return;
  }
  const port = await freePort();
  // Another process takes the port for about a millisecond at a time, then lets it go: the
  // window in which uWS fails and the port is free again by the time anyone asks why.
  const holder = spawn(
    process.execPath,
    [
      '-e',
      `const net = require('node:net');
       const hold = () => {
         const server = net.createServer();
         server.once('error', () => setTimeout(hold, Math.random() * 2));
         server.listen(${port}, '127.0.0.1', () =>
           setTimeout(() => server.close(() => setTimeout(hold, Math.random() * 2)), 1));
       };
       hold();
       process.stdout.write('holding\\n');`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    await new Promise((resolve) => holder.stdout.once('data', resolve));
    const failures: string[] = [];
    let listened = 0;
    for (let attempt = 0; attempt < 300; attempt++) {
      const engine = createUwsEngine(uws, async () => ({ status: 200, headers: {}, body: '' }));
      try {
        await engine.listen('127.0.0.1', port);
        listened++;
        engine.stopListening();
      } catch (error) {
        failures.push(new ListenError('HTTP', '127.0.0.1', port, error).message);
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    console.log(`listen-reasons: ${listened} listens, ${failures.length} failures`);
    for (const failure of failures)
      assert.match(
        failure,
        /\(PORT\): (the port is already in use \(EADDRINUSE\)|the port was taken each time)/,
      );
  } finally {
    holder.kill();
  }
});

test.run();
