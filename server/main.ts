import { configFromEnv } from './config.ts';
import { startService } from './app.ts';

const config = configFromEnv();
const service = await startService(config);
config.log(
  `listening on ${service.baseUrl} (${service.engine}, ${config.databaseUrl ? 'PostgreSQL' : 'PGlite'})`,
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
