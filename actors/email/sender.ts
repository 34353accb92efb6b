import { AsyncResource } from 'node:async_hooks';
import type { Transporter } from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool';
import {
  claimDueMail,
  markMailFailed,
  markMailRetry,
  markMailSent,
  outboxRaw,
  type ClaimedMail,
} from '../../storage/email/outbox.ts';
import type { Services } from '../kernel/services.ts';

/** This process's loop that hands queued mail to SMTP_URL (or logs it when there is none). */
export interface MailSender {
  /** A message was queued (and its transaction committed, when there was a unit of work). */
  queued(mail: { kind: string; recipient: string; messageId: string }): void;
  /** Something was queued: look now rather than at the next poll. */
  kick(): void;
  /** Resolves once nothing due is left unsent and no pass runs (tests, shutdown). */
  idle(): Promise<void>;
  /** Stops polling; resolves when the sends in flight have ended and the transport is closed. */
  stop(): Promise<void>;
}

/**
 * How often the loop looks for due mail besides kicks (queued by another process, retries, a
 * kick that came before its transaction committed). A real timer, not the service clock's: it
 * is the cadence of looking, while what is due is read from the service clock, so a test that
 * moves a TestClock past a retry sees it sent within a poll without asking.
 */
const POLL_MS = 1000;
/** Messages claimed in one pass. */
const CLAIM_LIMIT = 20;
/** Sends in flight at once in this process (and SMTP connections the pool keeps open). */
const MAX_IN_FLIGHT = 3;
/**
 * How long a claim holds a message against other claims: longer than a send can take with the
 * transport's time-outs below, so that a slow send is never sent a second time beside it. A
 * crash between claim and `sent_at` sends it again after this.
 */
export const CLAIM_LEASE_MS = 5 * 60_000;
/** Retry after 30 s, then 1, 2, 4... minutes, never more than an hour apart. */
const FIRST_RETRY_MS = 30_000;
const LONGEST_RETRY_MS = 60 * 60_000;
/** A message not sent within a day of being queued is given up (and never sent late). */
export const GIVE_UP_AFTER_MS = 24 * 60 * 60_000;

/** The wait after the `attempts`-th failed attempt (1: 30 s). */
export function retryDelayMs(attempts: number): number {
  return Math.min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(attempts - 1, 20));
}

/** How one send ended, as the outbox records it. */
type Outcome = { sent: true } | { sent: false; permanent: boolean; error: string };

/**
 * Starts this process's sender. With SMTP_URL: a loop that claims due rows of mail_outbox
 * (storage/email/outbox.ts claimDueMail), sends each with one pooled nodemailer transport
 * (envelope and raw bytes as queued: the same Message-ID on every attempt) and records the
 * outcome. Without it (the embedded default): no loop; each queued message is one log line and
 * stays in the outbox table.
 */
export async function startMailSender(
  services: Services,
  log: (message: string) => void,
): Promise<MailSender> {
  const smtpUrl = services.config.mail?.smtpUrl;
  if (!smtpUrl) return outboxOnly(log);
  // nodemailer's transports load only when there is an SMTP_URL to send to: without one, the
  // outbox is all there is, and their modules would be RSS for nothing.
  const { createTransport } = await import('nodemailer');
  // One transport per process, pooled: a burst of answers reuses a few open connections
  // instead of one handshake per message. The time-outs keep a send well inside the lease.
  const transport = createTransport({
    url: smtpUrl,
    pool: true,
    maxConnections: MAX_IN_FLIGHT,
    maxMessages: 100,
    connectionTimeout: 15_000,
    greetingTimeout: 15_000,
    socketTimeout: 60_000,
  });
  return new SendingLoop(services, transport, log);
}

function outboxOnly(log: (message: string) => void): MailSender {
  return {
    queued: ({ kind, recipient, messageId }) =>
      log(`mail: queued ${kind} to ${recipient} (no SMTP_URL: kept in the outbox) <${messageId}>`),
    kick: () => undefined,
    idle: async () => undefined,
    stop: async () => undefined,
  };
}

class SendingLoop implements MailSender {
  /** The pass running now (passes run one after another), null between passes. */
  private running: Promise<void> | null = null;
  private again = false;
  /** Whether the last pass found anything due (idle() runs passes until one finds nothing). */
  private lastPassFound = false;
  private poll: NodeJS.Timeout | null = null;
  private stopped = false;
  /**
   * The loop's own async context, taken at start: every pass runs in it, never in the context
   * of whoever kicked. A kick comes from enqueueMail, often inside a transaction callback; a
   * pass started there would carry that callback's mark, and its claim (driver.transaction)
   * would be refused as a call of the driver from inside its own transaction (on PGlite it
   * would wait for itself forever).
   */
  private readonly ownContext = new AsyncResource('MailSender');

  constructor(
    private readonly services: Services,
    private readonly transport: Transporter<SMTPPool.SentMessageInfo>,
    private readonly log: (message: string) => void,
  ) {
    this.kick();
  }

  queued(): void {
    this.kick();
  }

  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.stopPolling();
    this.running = this.ownContext
      .runInAsyncScope(() => this.passes())
      .finally(() => {
        this.running = null;
        if (!this.stopped)
          // Unref'd: the loop never keeps a process alive by itself (stop clears it anyway).
          this.poll = setTimeout(() => this.kick(), POLL_MS).unref();
      });
  }

  async idle(): Promise<void> {
    do {
      this.kick();
      await this.running;
    } while (this.lastPassFound && !this.stopped);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopPolling();
    await this.running;
    this.transport.close();
  }

  private stopPolling(): void {
    if (this.poll) clearTimeout(this.poll);
    this.poll = null;
  }

  private async passes(): Promise<void> {
    do {
      this.again = false;
      try {
        this.lastPassFound = await this.pass();
      } catch (error) {
        // The database away: the next poll tries again; the claimed rows wait for their lease.
        this.lastPassFound = false;
        this.log(`mail: the outbox could not be read: ${(error as Error).message}`);
      }
      if (this.lastPassFound) this.again = true;
    } while (this.again && !this.stopped);
  }

  /** Claims what is due and sends it, a few at a time; true when anything was due. */
  private async pass(): Promise<boolean> {
    const now = this.services.clock.now();
    const claim = await claimDueMail(this.services.driver, {
      now: new Date(now),
      leaseUntil: new Date(now + CLAIM_LEASE_MS),
      expireBefore: new Date(now - GIVE_UP_AFTER_MS),
      limit: CLAIM_LIMIT,
    });
    if (claim.expired > 0)
      this.log(`mail: ${claim.expired} message(s) older than 24 hours given up unsent`);
    const queue = [...claim.due];
    const worker = async () => {
      for (let mail = queue.shift(); mail; mail = queue.shift()) {
        // One message's outcome not recorded (the database away) must not end the pass while
        // other sends are in flight: its claim stands, and it is sent again when it runs out.
        await this.deliver(mail).catch((error: unknown) =>
          this.log(`mail: the outcome of <${mail.messageId}> was not recorded: ${String(error)}`),
        );
      }
    };
    await Promise.all(Array.from({ length: Math.min(MAX_IN_FLIGHT, queue.length) }, worker));
    return claim.due.length > 0 || claim.expired > 0;
  }

  private async deliver(mail: ClaimedMail): Promise<void> {
    const db = this.services.driver;
    const raw = await outboxRaw(db, mail.mailId);
    if (!raw) return;
    const outcome = await sendClaimedMail(this.transport, { ...mail, raw });
    const now = this.services.clock.now();
    if (outcome.sent) return markMailSent(db, mail.mailId, new Date(now));
    const nextAttemptAt = now + retryDelayMs(mail.attempts);
    if (outcome.permanent || nextAttemptAt > mail.createdAt.getTime() + GIVE_UP_AFTER_MS) {
      const why = outcome.permanent ? outcome.error : `gave up after 24 hours: ${outcome.error}`;
      this.log(`mail: ${mail.kind} to ${mail.recipient} failed <${mail.messageId}>: ${why}`);
      return markMailFailed(db, mail.mailId, new Date(now), why);
    }
    return markMailRetry(db, mail.mailId, new Date(nextAttemptAt), outcome.error);
  }
}

/**
 * Hands one claimed message to the relay: the queued bytes, unchanged, to the queued envelope.
 * A 5xx answer is permanent; a 4xx answer, a refused connection or a time-out passes.
 */
async function sendClaimedMail(
  transport: Transporter,
  mail: Pick<ClaimedMail, 'envelopeFrom' | 'recipient'> & { raw: Uint8Array },
): Promise<Outcome> {
  try {
    await transport.sendMail({
      envelope: { from: mail.envelopeFrom, to: [mail.recipient] },
      raw: Buffer.from(mail.raw),
    });
    return { sent: true };
  } catch (error) {
    const failure = error as Error & { responseCode?: number; response?: string; code?: string };
    const code = failure.responseCode;
    const detail = failure.response ?? failure.message;
    return {
      sent: false,
      permanent: code !== undefined && code >= 500 && code < 600,
      error: `${code ?? failure.code ?? 'error'}: ${detail}`.slice(0, 500),
    };
  }
}
