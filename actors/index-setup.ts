import { KNOWN_CONVENTIONS } from '../protocol/known-conventions.ts';
import { seedConventions } from '../storage/conventions.ts';
import {
  INDEX_READER_ROLE,
  READER_ROLE_SETUP,
  READER_ROLE_USABLE,
} from '../storage/index-scope.ts';
import type { Services } from './services.ts';

/**
 * At start: the built-in conventions (the index's axes need them), and whether agents' SQL can
 * run as the reader role. A database user that may not make roles leaves the SQL policy and the scope views as the guards, and the log says so.
 */
export async function prepareIndex(services: Services, log: (message: string) => void) {
  await seedConventions(services.driver, KNOWN_CONVENTIONS, new Date(services.clock.now()));
  const [row] = await services.driver.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock(7723004)');
    await tx.script(READER_ROLE_SETUP);
    return tx.query<{ usable: boolean }>(READER_ROLE_USABLE);
  });
  services.indexReaderRole = row?.usable === true;
  if (!services.indexReaderRole) {
    log(
      `index: the role ${INDEX_READER_ROLE} is missing or not granted to this database user; ` +
        `agents' SQL runs under the service's own role. To add it: ` +
        `create role ${INDEX_READER_ROLE} nologin; grant ${INDEX_READER_ROLE} to <service user>; then restart.`,
    );
  }
}
