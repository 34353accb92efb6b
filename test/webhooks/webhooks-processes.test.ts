import * as assert from 'uvu/assert';
import { newChanges, ofType } from '../helpers/changes.ts';
import { request } from '../helpers/http.ts';
import type { TestServer } from '../helpers/server.ts';
import { twoServerSuite } from '../helpers/two-servers.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';
import { startReceiver, type WebhookBody } from './webhooks-receivers.ts';

/**
 * Two processes on one PostgreSQL (two servers sharing a database): both listen for the agent's
 * changes (the hub hears the other's commits) and both try to deliver at every change, yet the
 * lease on the webhook row lets one at a time deliver, so each change reaches the endpoint
 * once, in order.
 */

const test = twoServerSuite('webhooks: two processes, one database', {
  webhookAllowPrivate: true,
  webhookTimeoutMs: 5000,
});

test('two processes on one database deliver each change once, in order', async ({ a, b }) => {
  // A receiver that takes its time, so that both processes are often awake at once.
  const receiver = await startReceiver((n) => ({ status: 200, delayMs: n % 3 === 0 ? 20 : 0 }));
  try {
    const agent = await a.signUp();
    const workspaceId = await newWorkspace(a, agent);
    const set = await request(a, 'PUT', '/whoami/webhook', {
      token: agent.api_token,
      body: { url: receiver.url, events: ['file.saved'] },
    });
    assert.is(set.status, 200);
    // B learns of the webhook as its resync (or the job) would.
    await b.services.webhookDelivery.sync();
    const count = 40;
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < count; i++) {
      const server: TestServer = i % 2 === 0 ? a : b;
      writes.push(saveFile(server, agent, workspaceId, `f${i}.md`, String(i)));
      if (i % 4 === 3) await Promise.all(writes.splice(0));
    }
    await Promise.all(writes);
    const deliveries = await receiver.waitFor(count);
    await Promise.all([a.services.webhookDelivery.idle(), b.services.webhookDelivery.idle()]);
    assert.is(receiver.received.length, count, 'no change twice');
    const feed = ofType(await newChanges(a, agent), 'file.saved');
    assert.equal(
      deliveries.map((delivery) => (JSON.parse(delivery.body) as WebhookBody).data.event_id),
      feed.map((change) => change.event_id),
      'in feed order',
    );
    assert.is(new Set(deliveries.map((d) => d.headers['webhook-id'])).size, count);
  } finally {
    await receiver.close();
  }
});

test.run();
