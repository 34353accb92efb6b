import type postgres from 'postgres';
import * as assert from 'uvu/assert';
import { adminConnection, terminateServiceBackends } from '../helpers/postgres-backends.ts';
import {
  callService as call,
  startServiceProcess,
  type ServiceProcess,
} from '../helpers/service-process.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';
import { eventually } from '../helpers/turns.ts';

/**
 * postgres.js 3.4.9 can throw `TypeError: Cannot read properties of null (reading 'write')`
 * from a `setImmediate` after a connection closed under it (porsager/postgres #1154, #1208):
 * outside any promise, so the whole process dies. The service carries a patch
 * (patches/postgres+3.4.9.patch); this suite kills the service's database connections again
 * and again while writes are in flight, on a real service process, and asserts that it lives.
 */
interface Context {
  url: string;
  admin: postgres.Sql;
  service: ServiceProcess;
}

const test = postgresSuite<Context>('the service survives its database connections being killed');

test.before(async (context) => {
  context.url = await freshDatabaseUrl();
  context.admin = adminConnection(context.url, 'connection-loss-test');
  context.service = await startServiceProcess({ DATABASE_URL: context.url });
});
test.after(async ({ admin, service }) => {
  await service.stop();
  await admin.end({ timeout: 5 });
});

/** Calls until the service answers 2xx again (it reconnects by itself). */
function answersAgain(attempt: () => Promise<Response>): Promise<Response> {
  return eventually('the service answers again', async () => {
    const response = await attempt().catch(() => null);
    if (response?.ok) return response;
    await response?.body?.cancel();
    return null;
  });
}

test('writes in flight while every database connection is killed, 25 times over, leave the service alive and writing', async ({
  admin,
  service,
}) => {
  let exitCode: unknown = 'alive';
  void service.exited.then((code) => (exitCode = code));
  const agent = (await (
    await answersAgain(() => call(service, 'POST', '/agents', null, { name: 'writer' }))
  ).json()) as { api_token: string };
  const token = agent.api_token;
  const workspace = (await (
    await answersAgain(() => call(service, 'POST', '/workspaces', token, {}))
  ).json()) as { workspace_id: string };
  const unanswered: string[] = [];
  for (let round = 0; round < 25 && exitCode === 'alive'; round++) {
    // Small writes (under 1 KiB: the driver sends them from setImmediate), reads and a
    // long-poll, all on the connections about to die.
    const inFlight = Array.from({ length: 12 }, (_, i) =>
      (i % 3 === 0
        ? call(service, 'GET', '/whoami', token)
        : i % 3 === 1
          ? call(service, 'GET', '/changes/wait?timeout=1', token)
          : call(
              service,
              'PUT',
              `/workspaces/${workspace.workspace_id}/files/r${round}-${i}.txt`,
              token,
              `round ${round}`,
            )
      ).then(
        (response) => response.body?.cancel(),
        (error: Error) => {
          if (error.name === 'TimeoutError') unanswered.push(`round ${round} request ${i}`);
        },
      ),
    );
    await terminateServiceBackends(admin);
    await Promise.all(inFlight);
  }
  assert.is(exitCode, 'alive', `the service process exited: ${service.stderr().slice(-1500)}`);
  // And it serves again once its connections are back.
  await answersAgain(() =>
    call(service, 'PUT', `/workspaces/${workspace.workspace_id}/files/after.txt`, token, 'after'),
  );
  assert.is(exitCode, 'alive');
  assert.equal(unanswered, [], 'every request is answered, if only with an error');
});

test.run();
