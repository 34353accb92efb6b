import { KNOWN_CONVENTIONS } from '../../protocol/conventions/known.ts';
import { seedConventions } from '../../storage/conventions/conventions.ts';
import { randomBytes } from 'node:crypto';
import {
  INDEX_READER_ROLE,
  LEAKPROOF_UNDO,
  lockIndexSetup,
  READER_LOGIN_NAME,
  READER_ROLE_SETUP,
  READER_ROLE_USABLE,
  readerLoginSetup,
} from '../../storage/index/index-scope.ts';
import { ensureServiceSecret } from '../../storage/kernel/service-secrets.ts';
import type { Services } from '../kernel/services.ts';

/**
 * At start: the built-in conventions (the index's axes need them), the LEAKPROOF marks of
 * earlier versions taken back, and whether agents' SQL can run as the reader role. A database
 * user that may not make roles leaves the SQL policy and the scope views as the guards, and the
 * log says so.
 */
export async function prepareIndex(services: Services, log: (message: string) => void) {
  await seedConventions(services.driver, KNOWN_CONVENTIONS, new Date(services.clock.now()));
  const [row] = await services.driver.transaction(async (tx) => {
    await lockIndexSetup(tx);
    await tx.script(READER_ROLE_SETUP);
    try {
      await tx.savepoint((inner) => inner.script(LEAKPROOF_UNDO));
    } catch (error) {
      // The scope views never rely on the marks, so agents' filters stay in scope regardless.
      log(
        `index: could not take back LEAKPROOF on ts_match_vq and the jsonb field functions ` +
          `(${error instanceof Error ? error.message : String(error)}); a superuser may run ` +
          `"alter function ... not leakproof" on them.`,
      );
    }
    return tx.query<{ usable: boolean }>(READER_ROLE_USABLE);
  });
  services.indexReaderRole = row?.usable === true;
  if (services.indexReaderRole && services.driver.loginAgentsAs) {
    const login = await services.driver.transaction(async (tx) => {
      await lockIndexSetup(tx);
      const [named] = await tx.query<{ name: string }>(READER_LOGIN_NAME);
      const secret = await ensureServiceSecret(tx, 'index-reader-login', randomBytes(24));
      const password = Buffer.from(secret).toString('hex');
      const name = named?.name ?? '';
      try {
        await tx.savepoint((inner) => inner.script(readerLoginSetup(name, password)));
        return { name, password };
      } catch {
        return null;
      }
    });
    services.indexReaderLogin =
      login !== null && (await services.driver.loginAgentsAs(login.name, login.password));
    if (!services.indexReaderLogin) {
      log(
        `index: agents' SQL connects as the service's user and switches to ${INDEX_READER_ROLE} ` +
          `(a login role of its own could not be made or could not log in here).`,
      );
    }
  }
  if (!services.indexReaderRole) {
    log(
      `index: the role ${INDEX_READER_ROLE} is missing or not granted to this database user; ` +
        `agents' SQL runs under the service's own role. To add it: ` +
        `create role ${INDEX_READER_ROLE} nologin; grant ${INDEX_READER_ROLE} to <service user>; then restart.`,
    );
  }
}
