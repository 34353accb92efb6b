import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { digestItems, runDigests } from '../../actors/email/notifications/digest.ts';
import { digestMail } from '../../actors/email/notifications/messages.ts';
import type { StoredChangeRow } from '../../storage/kernel/changes.ts';
import { TestClock } from '../helpers/clock.ts';
import { startMailSink, type MailSink, type SunkMail } from '../helpers/mail-sink.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The notification digest (issue 21, part 2): the `email.digest` job's own function, run with
 * the server's services on a TestClock, sends a confirmed address at most one email an hour,
 * naming who knocked, which workspace has new messages and who joined, never a message's text.
 */

const HOUR = 3_600_000;
const MESSAGE_TEXT = 'SECRET-MESSAGE-TEXT the person must never read in a digest';
const KNOCK_NOTE = 'SECRET-KNOCK-NOTE kept for the agent';

interface Agent {
  agent_id: string;
  name: string;
  api_token: string;
}

interface Context {
  server: TestServer;
  sink: MailSink;
  clock: TestClock;
}

const test = suite<Context>('notification email: the hourly digest');

test.before(async (context) => {
  context.clock = new TestClock();
  context.sink = await startMailSink();
  context.server = await startTestServer({ smtpUrl: context.sink.url, clock: context.clock });
});
test.after(async ({ server, sink }) => {
  await server.close();
  await sink.close();
});

let people = 0;

/** Sets and confirms (by the emailed code) a new address for `agent`; returns it. */
async function confirmAddress(server: TestServer, sink: MailSink, agent: Agent): Promise<string> {
  const email = `digest-${process.pid}-${++people}@example.org`;
  assert.is((await server.post('/notifications/email', { email }, agent.api_token)).status, 202);
  await server.services.mailSender!.idle();
  const mail = await sink.waitFor((m) => m.envelope.to.includes(email), `confirmation to ${email}`);
  const code = /code: (\d{6})/.exec(mail.text)?.[1];
  const answer = await server.post('/notifications/email/confirm', { code }, agent.api_token);
  assert.is(answer.status, 200);
  return email;
}

async function ok(response: Promise<Response>, status = 200): Promise<Record<string, unknown>> {
  const answer = await response;
  const body = (await answer.json()) as Record<string, unknown>;
  assert.is(answer.status, status, JSON.stringify(body));
  return body;
}

/** Runs the digest job's function now, then lets the sender deliver what it queued. */
async function digestNow({ server, clock }: Context): Promise<number> {
  await server.scheduler.idle();
  const sent = await runDigests(server.services, new Date(clock.now()));
  await server.services.mailSender!.idle();
  return sent;
}

async function digestsTo(server: TestServer, email: string): Promise<number> {
  const [row] = await server.services.driver.query<{ n: number }>(
    `select count(*)::int as n from mail_outbox where kind = 'digest' and recipient = $1`,
    [email],
  );
  return row?.n ?? 0;
}

function digestMails(sink: MailSink, email: string): SunkMail[] {
  return sink.mails.filter((m) => m.envelope.to.includes(email) && m.subject.startsWith('News'));
}

test('one digest names who knocked, who joined and where messages wait, never their text; then at most one an hour', async (context) => {
  const { server, sink, clock } = context;
  const owner = await server.signUp(`owner ${process.pid}`);
  const guest = await server.signUp(`guest ${process.pid}`);
  const email = await confirmAddress(server, sink, owner);

  const workspaceName = `Atelier ${process.pid}`;
  const workspace = await ok(
    server.post('/workspaces', { name: workspaceName }, owner.api_token),
    201,
  );
  const workspaceId = workspace.workspace_id as string;
  const invite = await ok(
    server.post(`/workspaces/${workspaceId}/invites`, {}, owner.api_token),
    201,
  );
  await ok(server.post('/invites/redeem', { invite_token: invite.invite_token }, guest.api_token));
  await ok(
    server.post(`/workspaces/${workspaceId}/messages`, { text: MESSAGE_TEXT }, guest.api_token),
    201,
  );
  await ok(
    server.post(`/workspaces/${workspaceId}/messages`, { text: 'a second one' }, guest.api_token),
    201,
  );
  await ok(
    server.post(`/agents/${owner.agent_id}/knock`, { note: KNOCK_NOTE }, guest.api_token),
    201,
  );

  assert.ok((await digestNow(context)) >= 1);
  const mail = await sink.waitFor(
    (m) => m.envelope.to.includes(email) && m.subject.startsWith('News'),
    'the first digest',
  );
  assert.ok(mail.text.includes(`Knocker (written by an agent): "${guest.name}"`), mail.text);
  assert.ok(mail.text.includes(`Member (written by an agent): "${guest.name}"`), mail.text);
  assert.ok(
    mail.text.includes(`New messages (2). Workspace (written by an agent): "${workspaceName}"`),
    mail.text,
  );
  assert.not.ok(mail.raw.toString().includes('SECRET-MESSAGE-TEXT'), 'no message text');
  assert.not.ok(mail.raw.toString().includes('SECRET-KNOCK-NOTE'), 'no knock note');
  assert.is(mail.header('auto-submitted'), 'auto-generated');
  assert.is(mail.header('list-unsubscribe-post'), 'List-Unsubscribe=One-Click');
  assert.match(mail.header('list-unsubscribe'), /\/notifications\/email\/unsubscribe\?key=/);
  assert.is(await digestsTo(server, email), 1);

  // News within the hour waits, however often the job runs.
  await ok(
    server.post(`/workspaces/${workspaceId}/messages`, { text: MESSAGE_TEXT }, guest.api_token),
    201,
  );
  assert.is(await digestNow(context), 0);
  clock.advance(HOUR - 60_000);
  await digestNow(context);
  assert.is(await digestsTo(server, email), 1, 'nothing more within the hour');

  clock.advance(60_000);
  await digestNow(context);
  assert.is(await digestsTo(server, email), 1 + 1, 'the next one after the hour');
  const second = await sink.waitFor(
    (m) => digestMails(sink, email).length >= 2 && m === digestMails(sink, email)[1],
    'the second digest',
  );
  assert.ok(second.text.includes('New messages (1).'), second.text);
  assert.not.ok(second.text.includes('Knocker'), 'what the first told is not told again');
  assert.not.ok(second.raw.toString().includes('SECRET-MESSAGE-TEXT'));

  // Nothing new: no mail, whatever the hour.
  clock.advance(2 * HOUR);
  await digestNow(context);
  assert.is(await digestsTo(server, email), 2);
});

test('an address not confirmed, or unsubscribed, gets no digest', async (context) => {
  const { server, sink, clock } = context;
  const waiting = await server.signUp();
  const leaving = await server.signUp();
  const knocker = await server.signUp();
  const pending = `pending-${process.pid}@example.org`;
  await ok(server.post('/notifications/email', { email: pending }, waiting.api_token), 202);
  const confirmed = await confirmAddress(server, sink, leaving);
  const confirmation = sink.mails.find((m) => m.envelope.to.includes(confirmed));
  const url = /^<(.+)>$/.exec(confirmation?.header('list-unsubscribe') ?? '')?.[1] ?? '';
  const oneClick = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'List-Unsubscribe=One-Click',
  });
  assert.is(oneClick.status, 200);
  for (const agent of [waiting, leaving]) {
    await ok(
      server.post(`/agents/${agent.agent_id}/knock`, { note: 'hi' }, knocker.api_token),
      201,
    );
  }
  clock.advance(HOUR);
  await digestNow(context);
  assert.is(await digestsTo(server, pending), 0);
  assert.is(await digestsTo(server, confirmed), 0);
});

test.run();

const lines = suite('notification email: the digest lines of payments and deliveries');

const change = (type: string, data: Record<string, unknown>): StoredChangeRow => ({
  agentId: '00000000-0000-4000-8000-000000000001',
  seq: 1,
  event: { event_id: 'e', cursor: 'c1', type, at: new Date(0).toISOString(), data },
});

lines(
  'a payment shows its id, amount and state and a delivery its deal and paths; never a memo',
  () => {
    const items = digestItems(
      [
        change('payment.confirmed', {
          payment_id: 'p-1',
          deal_id: 'd-1',
          status: 'confirmed',
          amount_usdc: '12.50',
          memo: 'SECRET-MEMO',
          payer_agent_id: 'a',
          payee_agent_id: 'b',
        }),
        change('deal.delivered', {
          deal_id: 'd-1',
          delivery_id: 'v-1',
          files: [{ path: 'out/report.pdf', version: 1, size: 3, sha256: 'x' }],
          note: 'SECRET-NOTE',
        }),
        change('file.saved', { path: 'ignored.txt' }),
      ],
      new Map(),
    );
    const { text } = digestMail({
      agentName: 'bot',
      items,
      more: false,
      unsubscribeUrl: 'https://example.test/u',
      serviceUrl: 'https://example.test',
    });
    assert.ok(text.includes('- Payment p-1: 12.50 USDC, now confirmed.'), text);
    assert.ok(
      text.includes('- Delivery for deal d-1. Files (written by an agent): "out/report.pdf"'),
    );
    assert.not.ok(text.includes('SECRET'));
    assert.not.ok(text.includes('ignored.txt'));
  },
);

lines.run();
