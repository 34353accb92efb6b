import { execFile } from 'node:child_process';
import * as assert from 'uvu/assert';
import { createMailAccount } from '../../actors/email/accounts.ts';
import { startMailDoor, type MailDoor } from '../../server/email/door.ts';
import type { InboundMail } from '../../server/email/inbound.ts';
import { SWAKS, clientSuite } from '../helpers/real-clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const DOMAIN = 'agents.example';

/**
 * swaks (Debian's), an SMTP client with no code in common with ours, against the SMTP door: the
 * door's real code in front of a router that records what it is handed.
 */
const test = clientSuite<{ server: TestServer; door: MailDoor; handed: InboundMail[] }>(
  'swaks against the SMTP door',
  SWAKS,
);

test.before(async (context) => {
  context.server = await startTestServer({ mailDomain: DOMAIN });
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
test.after(async ({ server, door }) => {
  await door.close();
  await server.close();
});

/** Runs swaks (never blocking the event loop: the door answers in this process). */
function swaks(...args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = execFile('swaks', ['--timeout', '20', ...args], (error, stdout, stderr) =>
      resolve({
        code: error ? Number((error as { code?: number }).code ?? 1) : 0,
        output: `${stdout}${stderr}`,
      }),
    );
    // swaks asks on stdin for anything it misses: it gets nothing, and never waits.
    child.stdin?.end();
  });
}

test('swaks sends a sign-up to the join address; the door takes it and hands it on once', async ({
  door,
  handed,
}) => {
  const messageId = `<swaks-${process.pid}@people.example.com>`;
  const send = () =>
    swaks(
      '--server',
      `127.0.0.1:${door.port}`,
      '--helo',
      'client.people.example.com',
      '--from',
      'person@people.example.com',
      '--to',
      `join@${DOMAIN}`,
      '--header',
      'Subject: Re: sign-up',
      '--header',
      `Message-Id: ${messageId}`,
      '--body',
      'name: swaks-bot\n\n-- \nA Person',
    );
  const first = await send();
  assert.is(first.code, 0, first.output);
  assert.match(first.output, /<- +250 /);
  const again = await send();
  assert.is(again.code, 0, 'a retry is answered 250 too');
  const taken = handed.filter((mail) => mail.messageId === messageId);
  assert.is(taken.length, 1, 'handed on once');
  assert.is(taken[0]!.subject, 'sign-up');
  assert.is(taken[0]!.text, 'name: swaks-bot');
  assert.is(taken[0]!.from, 'person@people.example.com');
});

test('swaks is refused at RCPT for another domain and for an unknown address (550)', async ({
  server,
  door,
}) => {
  for (const to of ['someone@gmail.com', `nobody@${DOMAIN}`]) {
    const result = await swaks(
      '--server',
      `127.0.0.1:${door.port}`,
      '--from',
      'person@people.example.com',
      '--to',
      to,
      '--body',
      'relay this',
    );
    assert.is.not(result.code, 0, to);
    assert.match(result.output, /<\*\* +550 /, to);
  }
  const agent = await server.signUp();
  const account = await createMailAccount(server.services.db(), server.services, {
    agentId: agent.agent_id,
    senderAddress: 'person@people.example.com',
  });
  const ok = await swaks(
    '--server',
    `127.0.0.1:${door.port}`,
    '--from',
    'person@people.example.com',
    '--to',
    `${account.localPart}@${DOMAIN}`,
    '--header',
    'Subject: whoami',
    '--body',
    'whoami',
  );
  assert.is(ok.code, 0, ok.output);
});

test.run();
