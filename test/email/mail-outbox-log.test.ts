import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { callJson } from '../helpers/http.ts';
import { startMailSink, type MailSink } from '../helpers/mail-sink.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * Mail queued inside a transaction (an email invite, a notification address's confirmation)
 * kicks the sending loop at once: the loop must send it without ever failing to read the
 * outbox. Its log is captured whole; a line saying the outbox could not be read fails the test.
 */
interface Context {
  server: TestServer;
  sink: MailSink;
  logs: string[];
}

const test = suite<Context>('queuing mail inside a transaction leaves the sending loop unharmed');

test.before(async (context) => {
  context.logs = [];
  context.sink = await startMailSink();
  context.server = await startTestServer({
    smtpUrl: context.sink.url,
    mailDomain: 'outbox-log.test',
    log: (line) => context.logs.push(line),
  });
});
test.after(async ({ server, sink }) => {
  await server.close();
  await sink.close();
});

/** Every way an agent's call queues mail in the transaction of its own write. */
const QUEUED_IN_A_TRANSACTION: {
  name: string;
  queue(server: TestServer, to: string): Promise<{ status: number }>;
}[] = [
  {
    name: 'invite_by_email',
    async queue(server, to) {
      const owner = await server.signUp();
      const workspaceId = await newWorkspace(server, owner);
      return callJson(server, 'POST', `/workspaces/${workspaceId}/invites/email`, owner.api_token, {
        email: to,
      });
    },
  },
  {
    name: 'set_notification_email',
    async queue(server, to) {
      const agent = await server.signUp();
      return callJson(server, 'POST', '/notifications/email', agent.api_token, { email: to });
    },
  },
];

for (const { name, queue } of QUEUED_IN_A_TRANSACTION) {
  test(`mail queued by ${name} is sent, and the outbox is never reported unreadable`, async ({
    server,
    sink,
    logs,
  }) => {
    const to = `${name.replaceAll('_', '-')}-${process.pid}@example.org`;
    const queued = await queue(server, to);
    assert.ok(queued.status >= 200 && queued.status < 300, `${name} answered ${queued.status}`);
    await sink.waitFor((mail) => mail.envelope.to.includes(to), `the mail of ${name}`);
    await server.services.mailSender?.idle();
    const unreadable = logs.filter((line) => /outbox could not be read|driver\.\w+\(\)/.test(line));
    assert.equal(unreadable, [], 'the sending loop never failed to read the outbox');
  });
}

test.run();
