import { configFromEnv } from './config.ts';
import { startService } from './app.ts';
import { ListenError } from './listen-error.ts';

const config = configFromEnv();
const service = await startService(config).catch((error: unknown) => {
  // A port that is taken or forbidden is the operator's to fix: one line that says how, no stack.
  if (!(error instanceof ListenError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
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
