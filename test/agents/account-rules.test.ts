import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { SERVICE_VERSION } from '../../protocol/version.ts';
import { directDoor, type DirectDoor } from '../helpers/direct.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The account, through the direct door: what whoami shows, the welcome change and the
 * remembered place, identities of one name, and the feedback an agent's feed records. What the
 * HTTP door answers (statuses, health): account.test.ts.
 */
const test = suite<{ server: TestServer; door: DirectDoor }>('account, without a transport');

test.before(async (context) => {
  context.server = await startTestServer();
  context.door = directDoor(context.server.services);
});
test.after(async ({ server }) => {
  await server.close();
});

test('whoami shows the account, the welcome change unread and the service version', async ({
  door,
}) => {
  const agent = await door.signUp('whoami checker');
  const me = await door.call('whoami', {}, agent.api_token);
  assert.is(me.agent_id, agent.agent_id);
  assert.is(me.name, 'whoami checker');
  assert.is(me.service_version, SERVICE_VERSION);
  assert.equal(me.unread, { changes: 1, messages: 0, knocks: 0 });
  assert.equal(me.storage, {
    used_bytes: 0,
    quota_bytes: 1024 ** 3,
    current_files_bytes: 0,
    older_versions_bytes: 0,
    staged_blocks_bytes: 0,
    uploads_in_progress_bytes: 0,
    rule: 'every_kept_byte',
  });
  assert.ok(!Number.isNaN(Date.parse(me.created_at)));
});

test('the first change of a new agent is agent.welcome pointing to /llms.txt', async ({
  server,
  door,
}) => {
  const agent = await door.signUp();
  const page = await door.call('changes', {}, agent.api_token);
  assert.is(page.changes.length, 1);
  assert.is(page.changes[0]?.type, 'agent.welcome');
  assert.is(page.changes[0]?.data.llms_txt, server.url('/llms.txt'));
  assert.is(page.cursor, page.changes[0]?.cursor);
});

test('reading the changes moves the remembered place, so whoami counts nothing unread', async ({
  door,
}) => {
  const agent = await door.signUp();
  await door.call('changes', {}, agent.api_token);
  const again = await door.call('changes', {}, agent.api_token);
  assert.is(again.changes.length, 0);
  const me = await door.call('whoami', {}, agent.api_token);
  assert.is(me.unread.changes, 0);
});

test('a second sign-up with the same name is a new, separate identity', async ({ door }) => {
  const first = await door.signUp('twin');
  const second = await door.signUp('twin');
  assert.is.not(first.agent_id, second.agent_id);
  assert.is.not(first.api_token, second.api_token);
});

test('feedback with a token records feedback.received in the sender feed', async ({ door }) => {
  const agent = await door.signUp();
  await door.call('changes', {}, agent.api_token);
  const { feedback_id } = await door.call(
    'leave_feedback',
    { message: 'Found a bug', category: 'bug' },
    agent.api_token,
  );
  const page = await door.call('changes', {}, agent.api_token);
  assert.is(page.changes.length, 1);
  assert.is(page.changes[0]?.type, 'feedback.received');
  assert.is(page.changes[0]?.data.feedback_id, feedback_id);
  assert.is(page.changes[0]?.actor?.agent_id, agent.agent_id);
});

test.run();
