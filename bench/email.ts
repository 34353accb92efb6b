/**
 * Commands by email: 1,000 `whoami` commands sent one after another over one SMTP connection
 * (nodemailer, pooled to a single connection) to an agent's private address; each answer is
 * caught by a relay sink (the SMTP_URL of the service) and matched to its command by
 * `In-Reply-To`. Figures: commands per second and the time from a command's first SMTP byte to
 * its answer in the sink. Beside it, in the same run, the baseline: the same client sending the
 * same messages to a bare smtp-server that only accepts mail (time to its `250`).
 *
 * The agent's mail account is a fixture (createMailAccount on the running service), so the run
 * measures commands, not the sign-up by email. DNS for the sender checks is a local stub.
 */
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { createTransport, type Transporter } from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { createMailAccount, privateAddress } from '../actors/email/accounts.ts';
import { startDnsStub } from '../test/helpers/dns-stub.ts';
import { startBenchServer } from './bench-server.ts';
import { ms, summarize, type LatencySummary } from './stats.ts';

export const EMAIL_COMMANDS = 1_000;
const SENDER = 'bench@bench.example';

export interface EmailFigure {
  commands: number;
  /** Commands per second through the service, answer in the sink included. */
  perSecond: number;
  latency: LatencySummary | null;
  /** Answers that never came (should be 0). */
  missing: number;
  baselinePerSecond: number;
  baselineLatency: LatencySummary | null;
}

/** A bare SMTP server: takes every message, reads it whole, calls back for each. */
async function bareSmtp(onMessage: (raw: Buffer) => void): Promise<{
  port: number;
  close: () => Promise<void>;
}> {
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    // No reverse DNS look-up of each client (smtp-server's default): it can wait a second.
    disableReverseLookup: true,
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        onMessage(Buffer.concat(chunks));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** One pooled connection, as a mail program holding one session open. */
function oneConnection(port: number): Transporter {
  return createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    pool: true,
    maxConnections: 1,
    maxMessages: Infinity,
  });
}

function inReplyTo(raw: Buffer): string | undefined {
  // Only the header block: the first empty line ends it.
  const end = raw.indexOf('\r\n\r\n');
  const head = raw.subarray(0, end < 0 ? raw.length : end).toString('latin1');
  return /^in-reply-to:\s*(<[^>\r\n]+>)/im.exec(head)?.[1];
}

export async function measureEmail(signal: AbortSignal): Promise<EmailFigure> {
  // The baseline first: the same client, the same messages, to a server that only accepts.
  const bare = await bareSmtp(() => undefined);
  const baselineSamples: number[] = [];
  const baselineClient = oneConnection(bare.port);
  const baselineStart = performance.now();
  for (let i = 0; i < EMAIL_COMMANDS && !signal.aborted; i++) {
    const started = performance.now();
    await baselineClient.sendMail({
      from: SENDER,
      to: 'sink@bench.example',
      subject: 'whoami',
      text: '',
    });
    baselineSamples.push(performance.now() - started);
  }
  const baselineSeconds = (performance.now() - baselineStart) / 1000;
  baselineClient.close();
  await bare.close();

  // The service, relaying its answers to a sink of the same kind.
  const answered = new Map<string, number>();
  const waiting = new Map<string, () => void>();
  const sink = await bareSmtp((raw) => {
    const id = inReplyTo(raw);
    if (!id) return;
    answered.set(id, performance.now());
    waiting.get(id)?.();
  });
  // The sender checks ask DNS for every message: a local stub answers (SPF and DMARC published,
  // no DKIM signature), so the figures are the service's and not a resolver's.
  const dns = await startDnsStub({
    'bench.example': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_dmarc.bench.example': { TXT: ['v=DMARC1; p=none'] },
  });
  const server = await startBenchServer({
    smtpUrl: `smtp://127.0.0.1:${sink.port}`,
    mailDnsServers: [dns.server],
  });
  const agent = await server.signUp('email bench');
  const account = await createMailAccount(server.services.driver, server.services, {
    agentId: agent.agent_id,
    senderAddress: SENDER,
  });
  const to = privateAddress(server.services, account);
  const client = oneConnection(server.smtpPort!);
  const samples: number[] = [];
  let missing = 0;
  const start = performance.now();
  for (let i = 0; i < EMAIL_COMMANDS && !signal.aborted; i++) {
    const messageId = `<bench-${i}-${process.pid}@bench.example>`;
    const started = performance.now();
    const answer = new Promise<void>((resolve) => {
      waiting.set(messageId, resolve);
      if (answered.has(messageId)) resolve();
    });
    await client.sendMail({ from: SENDER, to, subject: 'whoami', text: '', messageId });
    // An answer that does not come within 5 s counts as missing; the run goes on.
    const timedOut = await Promise.race([
      answer.then(() => false),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 5_000).unref()),
    ]);
    waiting.delete(messageId);
    if (timedOut) missing++;
    else samples.push((answered.get(messageId) ?? performance.now()) - started);
  }
  const seconds = (performance.now() - start) / 1000;
  client.close();
  await server.close();
  await sink.close();
  await dns.close();
  return {
    commands: samples.length + missing,
    perSecond: samples.length / seconds,
    latency: summarize(samples),
    missing,
    baselinePerSecond: baselineSamples.length / baselineSeconds,
    baselineLatency: summarize(baselineSamples),
  };
}

export function emailLines(figure: EmailFigure | null, skipped: string | null): string[] {
  const lines = [
    '',
    `Commands by email (bench/email.ts): ${EMAIL_COMMANDS.toLocaleString('en-US')} whoami commands, one after another over`,
    'one SMTP connection, each answer caught by the SMTP_URL relay sink; the baseline sends the same',
    'messages over one connection to a bare smtp-server that only accepts them (time to its 250).',
  ];
  if (!figure) {
    lines.push(skipped ? `skipped: ${skipped}` : '(no figures)');
    return lines;
  }
  lines.push(
    `- service: ${figure.perSecond.toFixed(1)} commands/s; command to answer in the sink p50 ${ms(figure.latency?.p50)}, p99 ${ms(figure.latency?.p99)}, max ${ms(figure.latency?.max)}; ${figure.missing} answers missing`,
    `- bare smtp-server: ${figure.baselinePerSecond.toFixed(1)} messages/s; to 250 p50 ${ms(figure.baselineLatency?.p50)}, p99 ${ms(figure.baselineLatency?.p99)}`,
  );
  return lines;
}

export function emailRatios(figure: EmailFigure | null): string[] {
  if (!figure) return ['commands by email: not measured'];
  return [
    `commands by email: ${figure.perSecond.toFixed(1)}/s beside ${figure.baselinePerSecond.toFixed(1)}/s accepted by a bare smtp-server (${(figure.perSecond / figure.baselinePerSecond).toFixed(2)} of it); p99 to the answer ${ms(figure.latency?.p99)} beside ${ms(figure.baselineLatency?.p99)} to a bare 250`,
  ];
}
