import * as assert from 'uvu/assert';
import { createMailAccount } from '../../actors/email/accounts.ts';
import { startMailDoor, type MailDoor } from '../../server/email/door.ts';
import type { InboundMail } from '../../server/email/inbound.ts';
import { sendToService } from '../helpers/mail-client.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';
import { eventually } from '../helpers/turns.ts';
import { TcpProxy } from '../storage/tcp-proxy.ts';

const DOMAIN = 'agents.example';

/**
 * PostgreSQL going away under the SMTP door: the door answers 451 (try again later) and keeps
 * nothing, so the sender's retry, once the database is back, runs the message once.
 */
const test = postgresSuite<{
  proxy: TcpProxy;
  server: TestServer;
  door: MailDoor;
  handed: InboundMail[];
}>('the SMTP door while its database is unreachable');

test.before(async (context) => {
  const url = await freshDatabaseUrl();
  const target = new URL(url);
  context.proxy = await TcpProxy.start(target.hostname, Number(target.port));
  context.server = await startTestServer({
    databaseUrl: context.proxy.rewrite(url),
    mailDomain: DOMAIN,
  });
  context.handed = [];
  const handed = context.handed;
  const take = async (mail: InboundMail) => void handed.push(mail);
  context.door = await startMailDoor(context.server.services, {
    host: '127.0.0.1',
    port: 0,
    router: { join: take, agent: take, invite: take, service: take },
    log: () => undefined,
  });
});
test.after(async ({ proxy, server, door }) => {
  await proxy.up().catch(() => undefined);
  await door.close();
  await server.close();
  await proxy.down();
});

/** Sends and answers the SMTP code: 250 taken, or the refusal's code. */
async function codeOf(port: number, mail: Parameters<typeof sendToService>[1]): Promise<number> {
  try {
    const { response } = await sendToService(port, mail);
    return Number(response.slice(0, 3));
  } catch (error) {
    return (error as { responseCode?: number }).responseCode ?? -1;
  }
}

test('the database away answers 451 at RCPT or DATA; the retry later runs the message once', async ({
  proxy,
  server,
  door,
  handed,
}) => {
  const agent = await server.signUp();
  const account = await createMailAccount(server.services.db(), server.services, {
    agentId: agent.agent_id,
    senderAddress: 'person@people.example.com',
  });
  const privateAddress = `${account.localPart}@${DOMAIN}`;
  const toJoin = {
    from: 'person@people.example.com',
    to: `join@${DOMAIN}`,
    subject: 'sign-up',
    text: 'name: while-down',
    messageId: '<while-down-join@people.example.com>',
  };
  const toAgent = { ...toJoin, to: privateAddress, subject: 'whoami', text: '' };
  toAgent.messageId = '<while-down-agent@people.example.com>';

  await proxy.down();
  // The join address needs no look-up at RCPT: the message is refused when it is recorded.
  assert.is(await codeOf(door.port, toJoin), 451);
  // A private address is looked up at RCPT.
  assert.is(await codeOf(door.port, toAgent), 451);
  assert.is(await codeOf(server.smtpPort!, toJoin), 451, "the service's own door alike");
  assert.is(handed.length, 0);

  await proxy.up();
  await eventually(
    'the door takes mail again',
    async () => (await codeOf(door.port, toJoin)) === 250,
  );
  assert.is(await codeOf(door.port, toAgent), 250);
  // The sender's further retries find the message taken.
  assert.is(await codeOf(door.port, toJoin), 250);
  assert.is(await codeOf(door.port, toAgent), 250);
  assert.equal(
    handed.map((mail) => mail.messageId),
    [toJoin.messageId, toAgent.messageId],
    'each ran once',
  );
  const rows = await server.services
    .db()
    .query<{ message_id: string; outcome: string }>(
      `select message_id, outcome from mail_inbound order by received_at`,
    );
  assert.equal(rows, [
    { message_id: `${toJoin.messageId} join@${DOMAIN}`, outcome: 'dispatched' },
    { message_id: `${toAgent.messageId} ${privateAddress}`, outcome: 'dispatched' },
  ]);
});

test.run();
