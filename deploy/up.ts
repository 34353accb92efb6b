/**
 * `npm run deploy:local [-- --processes N] [-- --logs]`: the whole deployment on this machine
 * (deploy/cluster.ts):
 * PostgreSQL 15 (a throw-away one, or a fresh database in `DATABASE_URL`'s server), s3rver as the
 * S3 store, N service processes (3 by default) and haproxy in front. Prints the proxy's address
 * and the operator's token, runs until Ctrl-C (or SIGTERM), then stops everything it started.
 * `--logs` prints the service processes' own log lines too.
 */
import { parseArgs } from 'node:util';
import { startCluster, type Cluster } from './cluster.ts';

const { values } = parseArgs({
  options: {
    processes: { type: 'string', default: '3' },
    logs: { type: 'boolean', default: false },
  },
});
const processes = Number(values.processes);
if (!Number.isInteger(processes) || processes < 1) {
  process.stderr.write('--processes takes a whole number, 1 or more\n');
  process.exit(2);
}

const say = (line: string) => process.stderr.write(`${line}\n`);
let signalled: NodeJS.Signals | undefined;
const signal = new Promise<NodeJS.Signals>((resolve) => {
  for (const name of ['SIGINT', 'SIGTERM'] as const)
    process.on(name, () => {
      signalled ??= name;
      resolve(name);
    });
});

let cluster: Cluster | undefined;
try {
  cluster = await startCluster({
    processes,
    ...(process.env.DATABASE_URL ? { databaseUrl: process.env.DATABASE_URL } : {}),
    log: say,
    forwardServiceLogs: values.logs,
  });
  if (!signalled) {
    process.stdout.write(
      [
        '',
        `The service runs at ${cluster.proxyUrl} (haproxy in front of ${processes} processes).`,
        `Operator token: ${cluster.operatorToken}`,
        ...cluster.processes.map((p) => `  ${p.name}: pid ${p.pid}, ${p.url}`),
        `Try: curl -X POST ${cluster.proxyUrl}/agents -H 'content-type: application/json' -d '{"name": "my-bot"}'`,
        'Ctrl-C stops everything.',
        '',
      ].join('\n'),
    );
  }
  // Runs until a signal; a service process that dies on its own is said, not restarted.
  say(`${await signal}: stopping everything...`);
} catch (error) {
  say(
    `could not start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
  );
  process.exitCode = 1;
} finally {
  try {
    await cluster?.stop();
    if (cluster) say('stopped.');
  } catch (error) {
    say(`stopped, with errors: ${String(error)}`);
    process.exitCode = 1;
  }
}
