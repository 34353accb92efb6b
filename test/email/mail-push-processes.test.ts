import * as assert from 'uvu/assert';
import { createMailAccount } from '../../actors/email/accounts.ts';
import { twoServerSuite } from '../helpers/two-servers.ts';

/**
 * Changes pushed by email with two processes on one database: pushing switched on in one
 * process is taken up by the other when it looks again, so the agent's changes still leave by
 * mail after the first stops pushing (a process that stopped).
 */
const test = twoServerSuite('changes pushed by email, two processes', {
  mailDomain: 'push.example',
});

test('pushing switched on in one process is taken up by the other, which then mails the change once', async ({
  a,
  b,
}) => {
  const agent = await a.signUp();
  await createMailAccount(a.services.driver, a.services, {
    agentId: agent.agent_id,
    senderAddress: 'person@people.example',
  });
  assert.is((await a.post('/mailgate/push', { push: true }, agent.api_token)).status, 200);
  // The process where it was switched on stops pushing (as when it stops); the other looks again.
  await a.services.mailPush!.stop();
  await b.services.mailPush!.sync();
  assert.is(
    (await b.post('/feedback', { message: 'heard by mail', category: 'other' }, agent.api_token))
      .status,
    202,
  );
  await b.services.mailPush!.idle();
  const rows = await b.services.db().query<{ subject: string }>(
    `select convert_from(raw, 'UTF8') as subject from mail_outbox
       where agent_id = $1 and kind = 'change'`,
    [agent.agent_id],
  );
  assert.is(rows.length, 1, 'the change left once, by the other process');
  assert.match(rows[0]!.subject, /Subject: change: feedback.received/);
});

test.run();
