import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DatabaseError } from '../../storage/database-error.ts';
import { bindScope } from '../../storage/index/index-scope.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * The guards beneath the SQL policy, met directly on the database the server uses: were the
 * policy ever to let a query through that it should not, the role and the scope views still
 * hold it to what its caller may read.
 */
const test = suite<{ server: TestServer }>('the index scope beneath the SQL policy');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

/** Runs `text` as agents' SQL runs: reader role, caller bound, read-only, on the agents' pool. */
async function asReader(server: TestServer, caller: string, text: string) {
  const { driver } = server.services;
  return driver.transaction(
    async (tx) => {
      await tx.query(bindScope(server.services.indexReaderRole), [caller]);
      return tx.query(text);
    },
    { readOnly: true, pool: 'agents' },
  );
}

async function refusal(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (error) {
    if (error instanceof DatabaseError) return error.sqlState ?? 'none';
    throw error;
  }
  return 'ran';
}

test('agents’ SQL runs as a role that reads the scope views and none of the service’s tables', async ({
  server,
}) => {
  assert.ok(server.services.indexReaderRole, 'the reader role is set up at start');
  const me = await server.signUp();
  for (const table of [
    'public.agents',
    'public.indexed_versions',
    'public.workspace_members',
    'public.service_secrets',
    'public.indexed_versions_public',
    'public.indexed_versions_private',
  ]) {
    assert.is(
      await refusal(asReader(server, me.agent_id, `select 1 from ${table}`)),
      '42501',
      table,
    );
  }
  const rows = await asReader(server, me.agent_id, 'select count(*) as n from agent_index.store');
  assert.equal(rows, [{ n: 0 }]);
});

test('the scope views show a caller only what it may read, even when named directly', async ({
  server,
}) => {
  const owner = await server.signUp();
  const stranger = await server.signUp();
  const id = await newWorkspace(server, owner);
  await saveFile(server, owner, id, 'secret.md', '---\ncity: Berlin\nsecret: 0\n---\n');
  const count = async (caller: string, view: string) =>
    (await asReader(server, caller, `select count(*) as n from agent_index.${view}`))[0]?.n;
  assert.is(await count(owner.agent_id, 'files_own'), 1);
  assert.is(await count(owner.agent_id, 'axis_values_own'), 1);
  for (const view of ['files_own', 'file_versions_own', 'axis_values_own', 'files_public']) {
    assert.is(await count(stranger.agent_id, view), 0, view);
  }
  // The owner's private rows reach a filter only through the caller's fenced CTE: the
  // stranger's failing expression never meets them.
  const probe = `select count(*) as n from agent_index.files_own
    where 1 / ((fields->>'secret')::int) = 1`;
  assert.equal(await asReader(server, stranger.agent_id, probe), [{ n: 0 }]);
  assert.is(await refusal(asReader(server, owner.agent_id, probe)), '22012');
});

test('on PostgreSQL agents’ SQL logs in as a reader of its own: going back to the session’s role gains nothing', async ({
  server,
}) => {
  const me = await server.signUp();
  if (server.services.driver.kind === 'pglite') {
    // One embedded connection, which the service's own role holds: only SET ROLE is possible.
    assert.not.ok(server.services.indexReaderLogin);
    return;
  }
  assert.ok(server.services.indexReaderLogin, 'the agents’ pool logs in as the reader');
  const tookBack = server.services.driver.transaction(
    async (tx) => {
      await tx.query("select set_config('role', session_user, true)");
      return tx.query('select count(*) from public.agents');
    },
    { readOnly: true, pool: 'agents' },
  );
  assert.is(await refusal(tookBack), '42501');
  const [who] = await asReader(server, me.agent_id, 'select session_user::text as name');
  assert.match(String(who?.name), /^agent_index_login_[0-9a-f]{12}$/);
});

test.run();
