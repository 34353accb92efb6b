import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { request } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { assertSigned, startReceiver, type Receiver } from './webhooks-receivers.ts';

/**
 * Webhook secrets at rest: they must be read back to sign, so they are kept encrypted, and with
 * RECEIPT_KEY_SECRET set, sealed under it as the receipt keys are (a stolen database alone opens
 * nothing). Deliveries still verify, and the secret's text is nowhere in the row.
 */

const test = suite<{ server: TestServer; receiver: Receiver }>(
  'webhooks: secrets sealed under RECEIPT_KEY_SECRET',
);

test.before(async (context) => {
  context.receiver = await startReceiver();
  context.server = await startTestServer({
    webhookAllowPrivate: true,
    receiptKeySecret: 'a test secret of enough length',
  });
});

test.after(async ({ server, receiver }) => {
  await server.close();
  await receiver.close();
});

test('the secret is sealed under RECEIPT_KEY_SECRET and deliveries verify with it', async ({
  server,
  receiver,
}) => {
  const agent = await server.signUp();
  const set = await request<{ secret: string }>(server, 'PUT', '/whoami/webhook', {
    token: agent.api_token,
    body: { url: receiver.url },
  });
  assert.is(set.status, 200);
  const [row] = await server.services.driver.query<{ secret_cipher: string }>(
    'select secret_cipher from webhooks where agent_id = $1',
    [agent.agent_id],
  );
  assert.match(String(row?.secret_cipher), /^v1s\./);
  assert.not.ok(String(row?.secret_cipher).includes(set.body.secret.slice(6)));
  // A cipher moved to another agent's row does not open there (the agent id is bound in).
  assert.throws(
    () => server.services.webhookSecrets.open(String(row?.secret_cipher), crypto.randomUUID()),
    /does not open/,
  );
  await request(server, 'POST', '/whoami/webhook/test', { token: agent.api_token });
  const [delivery] = await receiver.waitFor(1);
  await assertSigned(server, set.body.secret, delivery as (typeof receiver.received)[0]);
});

test.run();
