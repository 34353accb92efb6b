import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Operation } from '../../protocol/operation.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { callTool, connectMcp, toolProblem } from '../helpers/clients.ts';
import { callJson } from '../helpers/http.ts';
import { startDnsStub, type DnsStub } from '../helpers/dns-stub.ts';
import { sendToService, type OutgoingMail } from '../helpers/mail-client.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { newWorkspace } from '../helpers/workspaces.ts';

/**
 * The sign-up limit is one limit whatever the door: HTTP, MCP, a mail command, the mail join
 * address and a reply to an email invite all count in the same per-address bucket (every client
 * here is 127.0.0.1), so the limit's worth of sign-ups spread over the doors leaves every door
 * refusing the next. Sign-ups by mail also share one limit of all senders together. Everything
 * goes through the real doors: fetch, the MCP SDK's client, nodemailer to the SMTP door.
 */
interface Context {
  dns: DnsStub;
  privateKey: string;
}

const DOMAIN = 'limits.test';
const SENDERS = 'senders.example';
let sequence = 0;
const unique = (what: string) => `${what}-${process.pid}-${++sequence}`;

const test = suite<Context>('one sign-up limit holds across every door that makes an agent');

test.before(async (context) => {
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  context.privateKey = keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const publicKey = keys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  context.dns = await startDnsStub({
    [SENDERS]: { TXT: ['v=spf1 -all'] },
    [`mail._domainkey.${SENDERS}`]: { TXT: [`v=DKIM1; k=rsa; p=${publicKey}`] },
    [`_dmarc.${SENDERS}`]: { TXT: ['v=DMARC1; p=reject'] },
  });
});
test.after(async ({ dns }) => {
  await dns.close();
});

interface Answer {
  recipient: string;
  text: string;
  replyTo: string;
}

/** What the door queued in answer to one message (handled once SMTP answered 250). */
async function answersTo(server: TestServer, messageId: string): Promise<Answer[]> {
  const rows = await server.services
    .db()
    .query<{ recipient: string; raw: Uint8Array }>('select recipient, raw from mail_outbox');
  const answers: Answer[] = [];
  for (const row of rows) {
    const parsed = await simpleParser(Buffer.from(row.raw));
    if (parsed.inReplyTo === messageId)
      answers.push({
        recipient: row.recipient,
        text: parsed.text ?? '',
        replyTo: parsed.replyTo?.value[0]?.address ?? '',
      });
  }
  return answers;
}

async function send(server: TestServer, mail: Omit<OutgoingMail, 'messageId'>): Promise<string> {
  const messageId = `<${randomUUID()}@${SENDERS}>`;
  await sendToService(server.smtpPort!, { ...mail, messageId });
  return messageId;
}

/** What one attempt at a door did: made an agent (its id), or was refused as rate_limited. */
type Outcome = { made: string } | 'refused';

/** What the doors share between attempts: the mail agent that sends commands, the inviter. */
interface World {
  server: TestServer;
  dkim: OutgoingMail['dkim'];
  /** An agent that lives by email (made by the join door), for the command door. */
  mailAgent?: { address: string; from: string };
  /** An agent that invites by email (made by the HTTP door), for the invite-reply door. */
  inviter?: { token: string; workspaceId: string };
}

interface Door {
  name: string;
  signUp(world: World, operation: Operation): Promise<Outcome>;
}

/** Every door that carries an operation of the table, each running `operation` as sent. */
const OPERATION_DOORS: Door[] = [
  {
    name: 'HTTP',
    async signUp(world, operation) {
      const answer = await callJson<{ agent_id: string; api_token: string; code: string }>(
        world.server,
        operation.method,
        operation.path,
        null,
        { name: unique('http') },
      );
      if (answer.status === 429 && answer.body.code === 'rate_limited') return 'refused';
      assert.is(answer.status, 201, JSON.stringify(answer.body));
      if (!world.inviter) {
        const workspaceId = await newWorkspace(world.server, answer.body);
        world.inviter = { token: answer.body.api_token, workspaceId };
      }
      return { made: answer.body.agent_id };
    },
  },
  {
    name: 'MCP',
    async signUp(world, operation) {
      const client = await connectMcp(world.server, undefined, 'sign-up-limits');
      try {
        const result = await callTool(client, operation.name, { name: unique('mcp') });
        if (result.isError) {
          assert.is(toolProblem(result).code, 'rate_limited', JSON.stringify(result));
          return 'refused';
        }
        return { made: (result.structuredContent as { agent_id: string }).agent_id };
      } finally {
        await client.close();
      }
    },
  },
  {
    name: 'a mail command (aligned mail to a private address)',
    async signUp(world, operation) {
      const agent = world.mailAgent;
      assert.ok(agent, 'the join door made the mail agent first');
      const sent = await send(world.server, {
        from: agent.from,
        to: agent.address,
        subject: operation.name,
        text: `name: ${unique('command')}`,
        dkim: world.dkim,
      });
      const [answer] = await answersTo(world.server, sent);
      assert.is(answer?.recipient, agent.from);
      if (/code: rate_limited/.test(answer!.text)) return 'refused';
      const made = /agent_id: (\S+)/.exec(answer!.text)?.[1];
      assert.ok(made, answer!.text);
      return { made };
    },
  },
];

/** The mail doors that make an agent through sign_up without naming it. */
const MAIL_SIGN_UP_DOORS: Door[] = [
  {
    name: 'the mail join address',
    async signUp(world) {
      const from = `${unique('join')}@${SENDERS}`;
      const join = `join@${DOMAIN}`;
      const start = await send(world.server, {
        from,
        to: join,
        subject: 'sign-up',
        text: `name: ${unique('joined')}`,
      });
      const answers = await answersTo(world.server, start);
      // Past the limit nothing is started and nothing answered (an answer would mail any From).
      if (answers.length === 0) {
        const started = await world.server.services
          .db()
          .query('select 1 from mail_signups where sender_address = $1', [from]);
        assert.is(started.length, 0, 'no sign-up was started');
        return 'refused';
      }
      const code = /\b(\d{6})\b/.exec(answers[0]!.text)?.[1];
      assert.ok(code, answers[0]!.text);
      const reply = await send(world.server, {
        from,
        to: join,
        subject: 'Re: sign-up',
        text: code,
      });
      const [done] = await answersTo(world.server, reply);
      const made = /agent_id: (\S+)/.exec(done?.text ?? '')?.[1];
      const address = /private_address: (\S+)/.exec(done?.text ?? '')?.[1];
      assert.ok(made && address, done?.text);
      world.mailAgent ??= { address, from };
      return { made };
    },
  },
  {
    name: 'a reply to an email invite',
    async signUp(world) {
      const inviter = world.inviter;
      assert.ok(inviter, 'the HTTP door made the inviter first');
      const person = `${unique('invited')}@${SENDERS}`;
      const invited = await callJson(
        world.server,
        'POST',
        `/workspaces/${inviter.workspaceId}/invites/email`,
        inviter.token,
        { email: person },
      );
      assert.is(invited.status, 202, JSON.stringify(invited.body));
      const [row] = await world.server.services
        .db()
        .query<{ raw: Uint8Array }>('select raw from mail_outbox where recipient = $1', [person]);
      const inviteMail = await simpleParser(Buffer.from(row!.raw));
      const replyAddress = inviteMail.replyTo?.value[0]?.address ?? '';
      const reply = await send(world.server, {
        from: person,
        to: replyAddress,
        subject: `Re: ${inviteMail.subject ?? ''}`,
        text: `name: ${unique('by-invite')}`,
      });
      const [answer] = await answersTo(world.server, reply);
      assert.is(answer?.recipient, person);
      if (/rate_limited/.test(answer!.text)) {
        assert.match(answer!.text, /No agent was made/);
        return 'refused';
      }
      const made = /agent_id: (\S+)/.exec(answer!.text)?.[1];
      assert.ok(made, answer!.text);
      return { made };
    },
  },
];

/** The operations that sign up: each counts against the stricter sign-up limit. */
const SIGNING_UP = OPERATION_LIST.filter((operation) => operation.signUpLimited === true);

test('the mail doors make agents through sign_up, the one operation that signs up', () => {
  // The join address and invite replies run sign_up itself (server/email/): a new operation that
  // signs up needs a door here, and a look at whether mail should offer it too.
  assert.equal(
    SIGNING_UP.map((operation) => operation.name),
    ['sign_up'],
  );
});

for (const operation of SIGNING_UP) {
  test(`${operation.name}: the limit's worth of sign-ups over all doors leaves every door refusing the next`, async ({
    dns,
    privateKey,
  }) => {
    // Made first: the HTTP inviter and the join door's mail agent serve the doors after them.
    const doors = [
      OPERATION_DOORS[0]!,
      OPERATION_DOORS[1]!,
      MAIL_SIGN_UP_DOORS[0]!,
      OPERATION_DOORS[2]!,
      MAIL_SIGN_UP_DOORS[1]!,
    ];
    assert.is(doors.length, OPERATION_DOORS.length + MAIL_SIGN_UP_DOORS.length);
    const server = await startTestServer({
      mailDomain: DOMAIN,
      mailDnsServers: [dns.server],
      mailDnsTimeoutMs: 1000,
      signUpLimitPerHour: doors.length,
    });
    try {
      const world: World = {
        server,
        dkim: { domainName: SENDERS, keySelector: 'mail', privateKey },
      };
      const made: string[] = [];
      for (const door of doors) {
        const outcome = await door.signUp(world, operation);
        assert.ok(outcome !== 'refused', `${door.name} made an agent within the limit`);
        made.push(outcome.made);
      }
      assert.is(new Set(made).size, doors.length);
      for (const door of doors) {
        assert.is(
          await door.signUp(world, operation),
          'refused',
          `${door.name} refuses past the limit`,
        );
      }
    } finally {
      await server.close();
    }
  });
}

test('sign-ups by mail from all senders together stop at MAIL_SIGNUP_LIMIT_TOTAL_PER_HOUR', async ({
  dns,
  privateKey,
}) => {
  const server = await startTestServer({
    mailDomain: DOMAIN,
    mailDnsServers: [dns.server],
    mailDnsTimeoutMs: 1000,
    signUpLimitPerHour: 0,
    mailSignUpLimitTotalPerHour: 2,
  });
  try {
    const world: World = { server, dkim: { domainName: SENDERS, keySelector: 'mail', privateKey } };
    const join = MAIL_SIGN_UP_DOORS[0]!;
    const outcomes = [];
    for (let i = 0; i < 3; i++) outcomes.push(await join.signUp(world, SIGNING_UP[0]!));
    assert.is(outcomes.filter((outcome) => outcome !== 'refused').length, 2);
    assert.is(outcomes[2], 'refused');
    // HTTP is not held by the mail limit.
    assert.is(
      (await callJson(server, 'POST', '/agents', null, { name: unique('http') })).status,
      201,
    );
  } finally {
    await server.close();
  }
});

test.run();
