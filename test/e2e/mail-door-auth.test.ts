import { generateKeyPairSync } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startDnsStub, type DnsStub } from '../helpers/dns-stub.ts';
import { sendToService, type OutgoingMail } from '../helpers/mail-client.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const DOMAIN = 'agents.example';
const DNS_TIMEOUT_MS = 300;

/** A DKIM key pair: the private key to sign with, the TXT record that publishes the public one. */
function dkimKey() {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    record: `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`,
  };
}

interface Context {
  server: TestServer;
  dns: DnsStub;
  person: ReturnType<typeof dkimKey>;
  stranger: ReturnType<typeof dkimKey>;
}

const test = suite<Context>('the SMTP door checks SPF, DKIM and DMARC against a local DNS');

test.before(async (context) => {
  context.person = dkimKey();
  context.stranger = dkimKey();
  context.dns = await startDnsStub({
    // The person's domain: a DKIM key, DMARC that rejects, SPF that allows no address.
    'mail._domainkey.people.example.com': { TXT: [context.person.record] },
    '_dmarc.people.example.com': { TXT: ['v=DMARC1; p=reject; adkim=r; aspf=r'] },
    'people.example.com': { TXT: ['v=spf1 -all'] },
    // A stranger's own domain, with its own good key.
    'mail._domainkey.stranger.example.net': { TXT: [context.stranger.record] },
    '_dmarc.stranger.example.net': { TXT: ['v=DMARC1; p=none'] },
    'stranger.example.net': { TXT: ['v=spf1 -all'] },
  });
  context.server = await startTestServer({
    mailDomain: DOMAIN,
    mailDnsServers: [context.dns.server],
    mailDnsTimeoutMs: DNS_TIMEOUT_MS,
  });
});
test.after(async ({ server, dns }) => {
  await server.close();
  await dns.close();
});

let sequence = 0;

/** Sends to the join address and answers the verdict the door recorded for it. */
async function verdictOf(server: TestServer, mail: Partial<OutgoingMail>) {
  const messageId = `<auth-${process.pid}-${++sequence}@people.example.com>`;
  await sendToService(server.smtpPort!, {
    from: 'alice@people.example.com',
    to: `join@${DOMAIN}`,
    subject: 'sign-up',
    text: 'name: alice-bot',
    messageId,
    ...mail,
  });
  const rows = await server.services
    .db()
    .query<{ auth: { spf: string; dkim: string; dmarc: string; aligned: boolean } }>(
      `select auth from mail_inbound where message_id = $1`,
      [`${messageId} join@${DOMAIN}`],
    );
  assert.is(rows.length, 1, 'the verdict is recorded with the message');
  return rows[0]!.auth;
}

test('mail DKIM-signed by the From domain, whose DMARC the DNS serves, is aligned', async ({
  server,
  person,
}) => {
  const verdict = await verdictOf(server, {
    dkim: { domainName: 'people.example.com', keySelector: 'mail', privateKey: person.privateKey },
  });
  assert.equal(
    { spf: verdict.spf, dkim: verdict.dkim, dmarc: verdict.dmarc, aligned: verdict.aligned },
    { spf: 'fail', dkim: 'pass', dmarc: 'pass', aligned: true },
  );
});

test('the same From unsigned is not aligned (SPF allows no address, no DKIM)', async ({
  server,
}) => {
  const verdict = await verdictOf(server, {});
  assert.equal(
    { spf: verdict.spf, dkim: verdict.dkim, dmarc: verdict.dmarc, aligned: verdict.aligned },
    { spf: 'fail', dkim: 'none', dmarc: 'fail', aligned: false },
  );
});

test('a forged From signed with another domain good key is not aligned', async ({
  server,
  stranger,
}) => {
  const verdict = await verdictOf(server, {
    dkim: {
      domainName: 'stranger.example.net',
      keySelector: 'mail',
      privateKey: stranger.privateKey,
    },
  });
  assert.is(verdict.dkim, 'pass', "the stranger's own signature is good...");
  assert.is(verdict.dmarc, 'fail', '...but it is not the From domain');
  assert.is(verdict.aligned, false);
});

test('a signature the From domain published key does not verify fails, and is not aligned', async ({
  server,
  stranger,
}) => {
  // Signed with the stranger's key but claiming the person's domain: the key does not match.
  const verdict = await verdictOf(server, {
    dkim: {
      domainName: 'people.example.com',
      keySelector: 'mail',
      privateKey: stranger.privateKey,
    },
  });
  assert.is(verdict.dkim, 'fail');
  assert.is(verdict.aligned, false);
});

test('a DNS that never answers gives temperror after one look-up that asked it, never a pass', async ({
  server,
  dns,
  person,
}) => {
  dns.mode = 'silent';
  try {
    const asked = dns.questions.length;
    const verdict = await verdictOf(server, {
      dkim: {
        domainName: 'people.example.com',
        keySelector: 'mail',
        privateKey: person.privateKey,
      },
    });
    assert.ok(dns.questions.length > asked, 'the door asked the stub');
    assert.is(verdict.dkim, 'temperror');
    assert.is(verdict.spf, 'temperror');
    assert.is(verdict.dmarc, 'temperror');
    assert.is(verdict.aligned, false);
    // Once one look-up has timed out the others fail at once, without asking (mailauth asks
    // one after another: DKIM's key, then SPF, then DMARC): a dead DNS costs one time limit,
    // not one per look-up. Counted, not timed.
    assert.equal(dns.questions.slice(asked), ['TXT mail._domainkey.people.example.com']);
  } finally {
    dns.mode = 'answer';
  }
});

test.run();
