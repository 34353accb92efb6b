import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { SmtpSession } from '../helpers/smtp-session.ts';

const DOMAIN = 'agents.example';
const MiB = 1024 * 1024;

const test = suite<{ server: TestServer }>('the SMTP door and a message past its size limit');

test.before(async (context) => {
  // The default limit (MAIL_MAX_MESSAGE_BYTES, 25 MiB).
  context.server = await startTestServer({ mailDomain: DOMAIN });
});
test.after(async ({ server }) => {
  await server.close();
});

/**
 * External memory (Buffers) of this process still in use, where the door's message bytes live:
 * measured after a full garbage collection, so that chunks already let go do not count.
 */
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;
const retained = () => {
  collectGarbage();
  return process.memoryUsage().arrayBuffers;
};

test('a 50 MB message is refused at DATA with 552, nothing is recorded, and memory stays bounded', async ({
  server,
}) => {
  assert.is(server.services.config.mail!.maxMessageBytes, 25 * MiB);
  const { session } = await SmtpSession.open(server.smtpPort!);
  const before = retained();
  /**
   * The least held at any sample past the limit (every 5 MB from 35 MB on: the door, behind the
   * socket's buffers, is then past it). A door that kept what it read holds more at every
   * sample; the least, not the most, so that another suite's garbage at one sample (the whole
   * run shares this process) does not count.
   */
  let heldPastLimit = Infinity;
  try {
    await session.command('EHLO client.example');
    // No SIZE= in MAIL FROM: the client does not say, the door must find out while it reads.
    assert.is((await session.command('MAIL FROM:<person@people.example.com>')).code, 250);
    assert.is((await session.command(`RCPT TO:<join@${DOMAIN}>`)).code, 250);
    assert.is((await session.command('DATA')).code, 354);
    await session.write(
      'From: person@people.example.com\r\nSubject: sign-up\r\nMessage-ID: <huge@people.example.com>\r\n\r\n',
    );
    // One block of 64 lines written again and again: the client itself holds 64 KB.
    const block = Buffer.from(`${'x'.repeat(998)}\r\n`.repeat(64));
    let sent = 0;
    while (sent < 50 * MiB) {
      await session.write(block);
      sent += block.length;
      if (sent >= 35 * MiB && sent % (5 * MiB) < block.length)
        heldPastLimit = Math.min(heldPastLimit, retained() - before);
    }
    const reply = await session.command('\r\n.');
    assert.is(reply.code, 552, reply.text);
    // The connection is still usable: the refusal ended the message, not the session.
    assert.is((await session.command('RSET')).code, 250);
  } finally {
    session.close();
  }
  assert.ok(
    heldPastLimit < 8 * MiB,
    `past the limit the door lets go of what it read (held ${Math.round(heldPastLimit / MiB)} MiB more)`,
  );
  const rows = await server.services
    .db()
    .query(`select message_id from mail_inbound where message_id like '<huge@%'`);
  assert.equal(rows, [], 'nothing recorded');
});

test('a client that declares SIZE past the limit is refused at MAIL FROM before sending a byte', async ({
  server,
}) => {
  const { session } = await SmtpSession.open(server.smtpPort!);
  try {
    await session.command('EHLO client.example');
    const reply = await session.command(`MAIL FROM:<person@people.example.com> SIZE=${50 * MiB}`);
    assert.is(reply.code, 552, reply.text);
  } finally {
    session.close();
  }
});

test.run();
