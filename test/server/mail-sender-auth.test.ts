import { generateKeyPairSync } from 'node:crypto';
import { dkimSign } from 'mailauth';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { checkResolver, checkSender, type Arrival } from '../../server/email/sender-auth.ts';
import { startDnsStub, type DnsStub } from '../helpers/dns-stub.ts';

const TIMEOUT_MS = 200;

const test = suite<{ dns: DnsStub; privateKey: string }>(
  'sender authentication: the verdict and its DNS look-ups',
);

test.before(async (context) => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  context.privateKey = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const key = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  context.dns = await startDnsStub({
    'sel._domainkey.people.example.com': { TXT: [`v=DKIM1; k=rsa; p=${key}`] },
    '_dmarc.people.example.com': { TXT: ['v=DMARC1; p=quarantine'] },
    'people.example.com': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
  });
});
test.after(async ({ dns }) => {
  await dns.close();
});

const arrival: Arrival = {
  ip: '127.0.0.1',
  helo: 'client.people.example.com',
  envelopeFrom: 'alice@people.example.com',
  mta: 'agents.example',
};

async function signed(privateKey: string, from = 'alice@people.example.com'): Promise<Buffer> {
  const message = [
    `From: Alice <${from}>`,
    'To: join@agents.example',
    'Subject: sign-up',
    'Message-ID: <unit@people.example.com>',
    'Date: Tue, 25 Nov 2026 14:04:00 +0000',
    '',
    'name: alice-bot',
    '',
  ].join('\r\n');
  // The signer reads `signatureData`; its types name the one signature's fields at the top.
  const signature = { signingDomain: 'people.example.com', selector: 'sel', privateKey };
  const { signatures } = await dkimSign(message, { ...signature, signatureData: [signature] });
  return Buffer.from(signatures + message);
}

test('a signed message from an address SPF allows passes all three and is aligned', async ({
  dns,
  privateKey,
}) => {
  const verdict = await checkSender(
    await signed(privateKey),
    'alice@people.example.com',
    arrival,
    checkResolver([dns.server], TIMEOUT_MS),
  );
  assert.equal(verdict, { spf: 'pass', dkim: 'pass', dmarc: 'pass', aligned: true });
});

test('aligned only for the From the door hands on: another address than the checked one is not', async ({
  dns,
  privateKey,
}) => {
  const verdict = await checkSender(
    await signed(privateKey),
    'bob@people.example.com',
    arrival,
    checkResolver([dns.server], TIMEOUT_MS),
  );
  assert.is(verdict.dmarc, 'pass');
  assert.is(verdict.aligned, false);
  const none = await checkSender(
    await signed(privateKey),
    null,
    arrival,
    checkResolver([dns.server], TIMEOUT_MS),
  );
  assert.is(none.aligned, false, 'no From: never aligned');
});

test('a name the DNS does not hold is "not found", not a timeout', async ({ dns }) => {
  const resolve = checkResolver([dns.server], TIMEOUT_MS);
  const error = (await resolve('nothing.example.org', 'TXT').catch((e: unknown) => e)) as {
    code: string;
  };
  assert.is(error.code, 'ENOTFOUND');
  assert.equal(await resolve('people.example.com', 'TXT'), [['v=spf1 ip4:127.0.0.1 -all']]);
});

test('a DNS that never answers: the first look-up times out, the rest of the check fails without asking', async ({
  dns,
}) => {
  dns.mode = 'silent';
  try {
    const resolve = checkResolver([dns.server], TIMEOUT_MS);
    const asked = dns.questions.length;
    const first = (await resolve('people.example.com', 'TXT').catch((e: unknown) => e)) as {
      code: string;
    };
    assert.is(first.code, 'ETIMEOUT');
    assert.is(dns.questions.length, asked + 1, 'the first look-up asked the server');
    const second = (await resolve('_dmarc.people.example.com', 'TXT').catch((e: unknown) => e)) as {
      code: string;
    };
    assert.is(second.code, 'ETIMEOUT');
    // Counted, not timed: the second fails without asking, so it cannot wait.
    assert.is(dns.questions.length, asked + 1, 'the second look-up asked nothing');
  } finally {
    dns.mode = 'answer';
  }
});

test('a DNS that never answers makes a good signature temperror, never a pass', async ({
  dns,
  privateKey,
}) => {
  dns.mode = 'silent';
  try {
    const verdict = await checkSender(
      await signed(privateKey),
      'alice@people.example.com',
      arrival,
      checkResolver([dns.server], TIMEOUT_MS),
    );
    assert.equal(verdict, {
      spf: 'temperror',
      dkim: 'temperror',
      dmarc: 'temperror',
      aligned: false,
    });
  } finally {
    dns.mode = 'answer';
  }
});

test('bytes that are no message give a verdict with no pass, and do not throw', async ({ dns }) => {
  const verdict = await checkSender(
    Buffer.from('\u0000\u0001 not a message at all\r\n\r\n'),
    null,
    { ...arrival, envelopeFrom: '' },
    checkResolver([dns.server], TIMEOUT_MS),
  );
  assert.is(verdict.aligned, false);
  assert.is.not(verdict.dmarc, 'pass');
  assert.is.not(verdict.dkim, 'pass');
});

test.run();
