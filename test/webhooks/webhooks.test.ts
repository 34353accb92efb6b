import { Webhook } from 'standardwebhooks';
import * as assert from 'uvu/assert';
import { newChanges, ofType } from '../helpers/changes.ts';
import { TestClock } from '../helpers/clock.ts';
import { request } from '../helpers/http.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { TestServer } from '../helpers/server.ts';
import { joinWorkspace, newWorkspace, saveFile, type TestAgent } from '../helpers/workspaces.ts';
import {
  assertSigned,
  startReceiver,
  type Receiver,
  type WebhookBody,
} from './webhooks-receivers.ts';

/**
 * Webhooks end to end (issue 23, item 3): real receivers on loopback (WEBHOOK_ALLOW_PRIVATE on,
 * as the tests set it), deliveries signed both ways and verified by the Standard Webhooks
 * library and the JWKS key, in order, retried on the service clock, disabled after a day.
 */

const TIMEOUT_MS = 400;
const test = serverSuite<{ clock: TestClock; receivers: Receiver[] }>('webhooks', () => {
  // Starts now: the Standard Webhooks library checks webhook-timestamp against the wall clock.
  const clock = new TestClock(Date.now());
  return {
    extra: { clock, receivers: [] },
    config: { clock, webhookAllowPrivate: true, webhookTimeoutMs: TIMEOUT_MS },
  };
});

test.after.each(async ({ receivers }) => {
  for (const receiver of receivers.splice(0)) await receiver.close();
});

async function receiverFor(
  context: { receivers: Receiver[] },
  behaviour?: Parameters<typeof startReceiver>[0],
): Promise<Receiver> {
  const receiver = await startReceiver(behaviour);
  context.receivers.push(receiver);
  return receiver;
}

async function setWebhook(
  server: TestServer,
  agent: TestAgent,
  body: Record<string, unknown>,
): Promise<{ url: string; events: string[] | null; secret: string }> {
  const answer = await request<{ url: string; events: string[] | null; secret: string }>(
    server,
    'PUT',
    '/whoami/webhook',
    { token: agent.api_token, body },
  );
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
}

const bodyOf = (delivery: { body: string }) => JSON.parse(delivery.body) as WebhookBody;
const idsOf = (deliveries: { headers: Record<string, unknown> }[]) =>
  deliveries.map((delivery) => String(delivery.headers['webhook-id']));

test('deliveries arrive in order, signed v1 by the secret and v1a by the service key, each change as the feed shows it', async (context) => {
  const { server } = context;
  const receiver = await receiverFor(context);
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  await newChanges(server, agent);
  const { secret, events } = await setWebhook(server, agent, { url: receiver.url });
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.is(events, null);
  for (let i = 0; i < 6; i++)
    await saveFile(server, agent, workspaceId, `notes/${i}.md`, `# ${i}\n`);
  const deliveries = await receiver.waitFor(6);
  const feed = ofType(await newChanges(server, agent), 'file.saved');
  assert.equal(
    idsOf(deliveries),
    feed.map((change) => change.event_id),
  );
  for (const [i, delivery] of deliveries.entries()) {
    const body = await assertSigned(server, secret, delivery);
    assert.is(body.type, 'file.saved');
    assert.is(body.timestamp, (feed[i] as { at?: string } | undefined)?.at);
    assert.equal(body.data, feed[i]);
    assert.is(delivery.headers['content-type'], 'application/json');
  }
  // A signature by another secret does not verify: the library is really checking.
  const other = await setWebhook(server, agent, { url: receiver.url });
  assert.not.equal(other.secret, secret);
  assert.throws(() =>
    assertSignedSync(
      other.secret,
      deliveries[0] as { headers: Record<string, unknown>; body: string },
    ),
  );
});

/** The v1 check alone, synchronously (the library throws on a wrong secret). */
function assertSignedSync(
  secret: string,
  delivery: { headers: Record<string, unknown>; body: string },
) {
  new Webhook(secret).verify(delivery.body, {
    'webhook-id': String(delivery.headers['webhook-id']),
    'webhook-timestamp': String(delivery.headers['webhook-timestamp']),
    'webhook-signature': String(delivery.headers['webhook-signature']),
  });
}

test('only the event types named in `events` are sent, and a ping always is', async (context) => {
  const { server } = context;
  const receiver = await receiverFor(context);
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  await setWebhook(server, agent, { url: receiver.url, events: ['file.deleted'] });
  await saveFile(server, agent, workspaceId, 'a.md', 'a');
  await saveFile(server, agent, workspaceId, 'b.md', 'b');
  const deleted = await request(server, 'DELETE', `/workspaces/${workspaceId}/files/a.md`, {
    token: agent.api_token,
  });
  assert.is(deleted.status, 200, JSON.stringify(deleted.body));
  const ping = await request<{ delivery_id: string }>(server, 'POST', '/whoami/webhook/test', {
    token: agent.api_token,
  });
  assert.is(ping.status, 202);
  const deliveries = await receiver.waitFor(2);
  assert.equal(
    deliveries.map((delivery) => bodyOf(delivery).type),
    ['file.deleted', 'webhook.test'],
  );
  assert.is(deliveries[1]?.headers['webhook-id'], ping.body.delivery_id);
  await server.services.webhookDelivery.idle();
  assert.is(receiver.received.length, 2);
  const state = await request<{ delivered_cursor: string; events: string[] }>(
    server,
    'GET',
    '/whoami/webhook',
    { token: agent.api_token },
  );
  assert.equal(state.body.events, ['file.deleted']);
  assert.is(state.body.delivered_cursor, bodyOf(deliveries[1] as { body: string }).data.cursor);
});

test('test_webhook answers 202 with a delivery id that arrives as webhook-id, data naming the URL', async (context) => {
  const { server } = context;
  const receiver = await receiverFor(context);
  const agent = await server.signUp();
  const { secret } = await setWebhook(server, agent, { url: receiver.url });
  const ping = await request<{ delivery_id: string }>(server, 'POST', '/whoami/webhook/test', {
    token: agent.api_token,
  });
  assert.is(ping.status, 202);
  const [delivery] = await receiver.waitFor(1);
  const body = await assertSigned(server, secret, delivery as (typeof receiver.received)[0]);
  assert.is(body.data.event_id, ping.body.delivery_id);
  assert.is(body.type, 'webhook.test');
  assert.is(body.data.data.url, receiver.url);
  const feed = ofType(await newChanges(server, agent), 'webhook.test');
  assert.equal(
    feed.map((change) => change.event_id),
    [ping.body.delivery_id],
  );
});

test('a receiver answering 500 then 200 gets the same change again after 5 s, then the next', async (context) => {
  const { server, clock } = context;
  const receiver = await receiverFor(context, (n) => ({ status: n === 0 ? 500 : 200 }));
  const agent = await server.signUp();
  const workspaceId = await newWorkspace(server, agent);
  const { secret } = await setWebhook(server, agent, { url: receiver.url });
  await saveFile(server, agent, workspaceId, 'one.md', '1');
  await saveFile(server, agent, workspaceId, 'two.md', '2');
  await receiver.waitFor(1);
  await server.services.webhookDelivery.idle();
  const failing = await request<{
    last_error: string;
    failing_since: string;
    next_attempt_at: string;
  }>(server, 'GET', '/whoami/webhook', { token: agent.api_token });
  assert.is(failing.body.last_error, 'answered 500');
  assert.is(
    Date.parse(failing.body.next_attempt_at) - Date.parse(failing.body.failing_since),
    5000,
  );
  // Not before its time: a second short of the retry, nothing more was sent.
  clock.advance(4000);
  await server.services.webhookDelivery.idle();
  assert.is(receiver.received.length, 1);
  clock.advance(1000);
  const deliveries = await receiver.waitFor(3);
  const [first, again, next] = deliveries.map((delivery) => bodyOf(delivery));
  assert.is(again?.data.event_id, first?.data.event_id);
  assert.is(next?.data.data.path, 'two.md');
  assert.is(first?.data.data.path, 'one.md');
  for (const delivery of deliveries.slice(1)) await assertSigned(server, secret, delivery);
  await server.services.webhookDelivery.idle();
  const healthy = await request<{ last_error: string | null; failing_since: string | null }>(
    server,
    'GET',
    '/whoami/webhook',
    { token: agent.api_token },
  );
  assert.is(healthy.body.last_error, null);
  assert.is(healthy.body.failing_since, null);
});

test('a receiver that hangs is cut off after WEBHOOK_TIMEOUT_MS and the change is retried', async (context) => {
  const { server, clock } = context;
  const receiver = await receiverFor(context, (n) => (n === 0 ? 'hang' : { status: 204 }));
  const agent = await server.signUp();
  await setWebhook(server, agent, { url: receiver.url });
  const ping = await request<{ delivery_id: string }>(server, 'POST', '/whoami/webhook/test', {
    token: agent.api_token,
  });
  await receiver.waitFor(1);
  await server.services.webhookDelivery.idle();
  const state = await request<{ last_error: string }>(server, 'GET', '/whoami/webhook', {
    token: agent.api_token,
  });
  assert.is(state.body.last_error, `no answer within ${TIMEOUT_MS} ms`);
  clock.advance(5000);
  const deliveries = await receiver.waitFor(2);
  assert.equal(idsOf(deliveries), [ping.body.delivery_id, ping.body.delivery_id]);
});

test('a slow receiver that answers within the time limit gets every change once, in order', async (context) => {
  const { server } = context;
  const receiver = await receiverFor(context, () => ({ status: 200, delayMs: TIMEOUT_MS / 2 }));
  const agent = await server.signUp();
  await setWebhook(server, agent, { url: receiver.url });
  const pings: string[] = [];
  for (let i = 0; i < 3; i++) {
    const ping = await request<{ delivery_id: string }>(server, 'POST', '/whoami/webhook/test', {
      token: agent.api_token,
    });
    pings.push(ping.body.delivery_id);
  }
  const deliveries = await receiver.waitFor(3);
  await server.services.webhookDelivery.idle();
  assert.equal(idsOf(deliveries), pings);
  assert.is(receiver.received.length, 3);
});

test('after 24 hours of failing the webhook is disabled and webhook.disabled reaches the feed', async (context) => {
  const { server, clock } = context;
  const receiver = await receiverFor(context, () => ({ status: 503 }));
  const agent = await server.signUp();
  await setWebhook(server, agent, { url: receiver.url });
  await newChanges(server, agent);
  const started = clock.now();
  await request(server, 'POST', '/whoami/webhook/test', { token: agent.api_token });
  let disabledAt: string | null = null;
  for (let attempts = 1; attempts < 60 && disabledAt === null; attempts++) {
    await receiver.waitFor(attempts, `attempt ${attempts}`);
    await server.services.webhookDelivery.idle();
    const state = await request<{ disabled_at: string | null }>(server, 'GET', '/whoami/webhook', {
      token: agent.api_token,
    });
    disabledAt = state.body.disabled_at;
    if (disabledAt === null) clock.advance(60 * 60_000);
  }
  assert.ok(disabledAt, 'disabled');
  assert.ok(Date.parse(disabledAt) - started >= 24 * 60 * 60_000, 'not before 24 hours');
  assert.ok(Date.parse(disabledAt) - started < 26 * 60 * 60_000, 'soon after 24 hours');
  // Backoff: 5 s doubling up to an hour apart, so about 24 attempts in the day, not hundreds.
  assert.ok(
    receiver.received.length > 20 && receiver.received.length < 35,
    String(receiver.received.length),
  );
  const [disabled] = ofType(await newChanges(server, agent), 'webhook.disabled');
  assert.ok(disabled, 'webhook.disabled is in the feed');
  assert.equal(disabled.data, {
    url: receiver.url,
    failing_since: new Date(started).toISOString(),
    last_error: 'answered 503',
  });
  // Nothing more goes out, neither the notice nor later changes, until set_webhook again.
  const sent = receiver.received.length;
  await request(server, 'POST', '/whoami/webhook/test', { token: agent.api_token });
  clock.advance(2 * 60 * 60_000);
  await server.services.webhookDelivery.sync();
  await server.services.webhookDelivery.idle();
  assert.is(receiver.received.length, sent);
  receiver.behaviour = () => ({ status: 200 });
  await setWebhook(server, agent, { url: receiver.url });
  const ping = await request<{ delivery_id: string }>(server, 'POST', '/whoami/webhook/test', {
    token: agent.api_token,
  });
  const after = await receiver.waitFor(sent + 1);
  assert.is(after.at(-1)?.headers['webhook-id'], ping.body.delivery_id);
});

test('a suspended agent gets no deliveries; restored, the safety-net job delivers what waited', async (context) => {
  const { server, clock } = context;
  const receiver = await receiverFor(context);
  const owner = await server.signUp();
  const member = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  await joinWorkspace(server, owner, member, workspaceId);
  await setWebhook(server, owner, { url: receiver.url, events: ['file.saved'] });
  const driver = server.services.driver;
  await driver.query('update agents set suspended_at = now() where agent_id = $1', [
    owner.agent_id,
  ]);
  await saveFile(server, member, workspaceId, 'while-suspended.md', 'x');
  await server.services.webhookDelivery.idle();
  assert.is(receiver.received.length, 0);
  await driver.query('update agents set suspended_at = null where agent_id = $1', [owner.agent_id]);
  clock.advance(60_000);
  const [delivery] = await receiver.waitFor(1, 'the delivery after restoring');
  assert.is(bodyOf(delivery as { body: string }).data.data.path, 'while-suspended.md');
});

test('get, delete and bad input: the secret is never shown again, refusals write nothing', async ({
  server,
}) => {
  const agent = await server.signUp();
  const call = (method: string, path: string, body?: unknown) =>
    request(server, method, path, { token: agent.api_token, body });
  assert.is((await call('GET', '/whoami/webhook')).body.code, 'not_found');
  assert.is((await call('POST', '/whoami/webhook/test')).body.code, 'not_found');
  assert.is((await call('DELETE', '/whoami/webhook')).body.code, 'not_found');
  for (const body of [
    { url: 'ftp://example.org/hook' },
    { url: 'https://user:pass@example.org/hook' },
    { url: 'not a url' },
    { url: `https://example.org/${'a'.repeat(2048)}` },
    { url: 'https://example.org/hook', events: ['file.saved', 'no.such.event'] },
    { url: 'https://example.org/hook', events: [] },
    { url: 'https://example.org/hook', secret: 'whsec_mine' },
  ]) {
    const refused = await call('PUT', '/whoami/webhook', body);
    assert.is(refused.status, 400, JSON.stringify(body));
    assert.ok(['invalid_input', 'unknown_field'].includes(String(refused.body.code)));
  }
  assert.is((await call('GET', '/whoami/webhook')).status, 404, 'nothing was written');
  const receiver = await startReceiver();
  try {
    const set = await call('PUT', '/whoami/webhook', { url: receiver.url });
    const got = await call('GET', '/whoami/webhook');
    assert.is(got.status, 200);
    assert.is(got.body.url, receiver.url);
    assert.is(got.body.disabled_at, null);
    assert.not.ok('secret' in got.body);
    assert.not.ok(JSON.stringify(got.body).includes(String(set.body.secret).slice(6)));
    // At rest, only a cipher: the secret's text is nowhere in the row.
    const [row] = await server.services.driver.query<{ secret_cipher: string }>(
      'select secret_cipher from webhooks where agent_id = $1',
      [agent.agent_id],
    );
    assert.ok(row && !row.secret_cipher.includes(String(set.body.secret).slice(6)));
    assert.equal((await call('DELETE', '/whoami/webhook')).body, { deleted: true });
    assert.is((await call('GET', '/whoami/webhook')).status, 404);
    await call('POST', '/feedback', { category: 'idea', message: 'after the webhook went' });
    await server.services.webhookDelivery.idle();
    assert.is(receiver.received.length, 0);
  } finally {
    await receiver.close();
  }
});

test.run();
