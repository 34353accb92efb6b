import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { SERVICE_VERSION } from '../../protocol/version.ts';

/**
 * The account at the HTTP door: sign-up's 201 and token, anonymous feedback's 202, health, and
 * the operator agent a first start makes. The account's rules, through the direct door:
 * account-rules.test.ts.
 */
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

test('feedback without a token is acknowledged with an id', async ({ server }) => {
  const response = await server.post('/feedback', {
    message: 'How do I pay?',
    category: 'question',
  });
  assert.is(response.status, 202);
  const body = (await response.json()) as { feedback_id: string };
  assert.match(body.feedback_id, /^[0-9a-f-]{36}$/);
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
