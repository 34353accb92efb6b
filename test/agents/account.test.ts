import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { SERVICE_VERSION } from '../../protocol/version.ts';

const test = suite<{ server: TestServer }>('account over HTTP');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

test('sign-up answers 201 with an id, the name and a prefixed token shown once', async ({
  server,
}) => {
  const response = await server.post('/agents', { name: 'Translator Bot' });
  assert.is(response.status, 201);
  const body = (await response.json()) as Record<string, string>;
  assert.match(body.agent_id as string, /^[0-9a-f-]{36}$/);
  assert.is(body.name, 'Translator Bot');
  assert.match(body.api_token as string, /^asvc_[0-9A-Za-z]{46}$/);
});

test('whoami shows the account, the welcome change unread and the service version', async ({
  server,
}) => {
  const agent = await server.signUp('whoami checker');
  const response = await server.get('/whoami', agent.api_token);
  assert.is(response.status, 200);
  const me = (await response.json()) as Record<string, unknown>;
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
  assert.ok(!Number.isNaN(Date.parse(me.created_at as string)));
});

test('the first change of a new agent is agent.welcome pointing to /llms.txt', async ({
  server,
}) => {
  const agent = await server.signUp();
  const page = (await (await server.get('/changes', agent.api_token)).json()) as {
    changes: { type: string; data: Record<string, string>; cursor: string }[];
    cursor: string;
  };
  assert.is(page.changes.length, 1);
  assert.is(page.changes[0]?.type, 'agent.welcome');
  assert.is(page.changes[0]?.data.llms_txt, server.url('/llms.txt'));
  assert.is(page.cursor, page.changes[0]?.cursor);
});

test('reading the changes moves the remembered place, so whoami counts nothing unread', async ({
  server,
}) => {
  const agent = await server.signUp();
  await server.get('/changes', agent.api_token);
  const again = (await (await server.get('/changes', agent.api_token)).json()) as {
    changes: unknown[];
  };
  assert.is(again.changes.length, 0);
  const me = (await (await server.get('/whoami', agent.api_token)).json()) as {
    unread: { changes: number };
  };
  assert.is(me.unread.changes, 0);
});

test('a second sign-up with the same name is a new, separate identity', async ({ server }) => {
  const first = await server.signUp('twin');
  const second = await server.signUp('twin');
  assert.is.not(first.agent_id, second.agent_id);
  assert.is.not(first.api_token, second.api_token);
});

test('feedback without a token is acknowledged with an id', async ({ server }) => {
  const response = await server.post('/feedback', {
    message: 'How do I pay?',
    category: 'question',
  });
  assert.is(response.status, 202);
  const body = (await response.json()) as { feedback_id: string };
  assert.match(body.feedback_id, /^[0-9a-f-]{36}$/);
});

test('feedback with a token records feedback.received in the sender feed', async ({ server }) => {
  const agent = await server.signUp();
  await server.get('/changes', agent.api_token);
  const response = await server.post(
    '/feedback',
    { message: 'Found a bug', category: 'bug' },
    agent.api_token,
  );
  assert.is(response.status, 202);
  const { feedback_id } = (await response.json()) as { feedback_id: string };
  const page = (await (await server.get('/changes', agent.api_token)).json()) as {
    changes: { type: string; actor: { agent_id: string }; data: Record<string, unknown> }[];
  };
  assert.is(page.changes.length, 1);
  assert.is(page.changes[0]?.type, 'feedback.received');
  assert.is(page.changes[0]?.data.feedback_id, feedback_id);
  assert.is(page.changes[0]?.actor.agent_id, agent.agent_id);
});

test('health answers ok with the service version', async ({ server }) => {
  const response = await server.get('/health');
  assert.is(response.status, 200);
  assert.equal(await response.json(), {
    status: 'ok',
    service_version: SERVICE_VERSION,
    smtp_port: server.smtpPort,
  });
});

test('the operator agent exists from the first start under its configured name', async ({
  server,
}) => {
  const rows = await server.services.driver.query<{ name: string }>(
    'select name from agents where is_operator',
  );
  assert.equal(rows, [{ name: 'service' }]);
});

test.run();
