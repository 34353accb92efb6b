import { configFromEnv } from './config.ts';
import { startService } from './app.ts';
import { StartRefusal } from './listen-error.ts';

/** A setting, an engine or a port the operator must fix: one line that says how, no stack. */
function refuse(error: unknown): never {
  if (!(error instanceof StartRefusal)) throw error;
  const line = error.message.startsWith('cannot start: ')
    ? error.message
    : `cannot start: ${error.message}`;
  process.stderr.write(`${line}\n`);
  process.exit(1);
}

let config: ReturnType<typeof configFromEnv>;
try {
  config = configFromEnv();
} catch (error) {
  refuse(error);
}
const service = await startService(config).catch(refuse);
config.log(
  `listening on ${service.baseUrl} (${service.engine}, ${config.databaseUrl ? 'PostgreSQL' : 'PGlite'}), ` +
    (service.smtpPort === null
      ? 'no mail door (SMTP_PORT=off)'
      : `mail door on ${config.smtpHost}:${service.smtpPort}`),
);

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    if (stopping) return;
    stopping = true;
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        config.log(`shutdown failed: ${String(error)}`);
        process.exit(1);
      },
    );
  });
}
