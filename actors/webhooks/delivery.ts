import { randomUUID } from 'node:crypto';
import { WEBHOOK_GIVE_UP_HOURS } from '../../protocol/webhooks.ts';
import type { StoredChangeRow } from '../../storage/kernel/changes.ts';
import {
  claimWebhook,
  disableWebhook,
  dueWebhookAgents,
  liveWebhookAgents,
  markDelivered,
  markFailed,
  releaseWebhook,
  type WebhookRow,
} from '../../storage/webhooks.ts';
import { changesAfter } from '../feed/feed.ts';
import { FeedFollower } from '../feed/follower.ts';
import type { Services } from '../kernel/services.ts';
import type { AddressPolicy } from './address-guard.ts';
import { postWebhook } from './post.ts';
import type { SecretBox } from './secret-box.ts';
import { signedHeaders } from './signer.ts';

/** The webhook settings of the start-up contract (server/config.ts). */
export interface WebhookSettings extends AddressPolicy {
  /** WEBHOOK_TIMEOUT_MS: one attempt (look-ups, redirects, answer) ends after this. */
  timeoutMs: number;
}

/** Changes read from the feed at a time. */
const BATCH = 100;
/** Retry after 5 s, then twice as long each time, never more than an hour apart. */
const FIRST_RETRY_MS = 5_000;
const LONGEST_RETRY_MS = 60 * 60_000;
const GIVE_UP_AFTER_MS = WEBHOOK_GIVE_UP_HOURS * 60 * 60_000;

/** The wait after the `attempts`-th failed attempt in a row (1: 5 s). */
function retryDelayMs(attempts: number): number {
  return Math.min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.min(attempts - 1, 20));
}

/**
 * Delivers each agent's feed to its webhook, in order, from `delivered_seq` on (the feed is the
 * outbox): one change in flight per agent, the cursor moved only on a 2xx, so a change is
 * delivered at least once and receivers de-duplicate by `webhook-id` (the event id).
 *
 * Every process listens to the change hub for the agents with webhooks (the hub hears other
 * processes' commits too) and tries to deliver when one gets a change; a lease on the webhook
 * row (storage/webhooks.ts claimWebhook) lets one process at a time deliver to an endpoint. A
 * failure is retried on the service clock (so tests move the clock, never sleep), and the
 * `webhooks.deliver` job catches whatever no wake-up reached (a process that died holding a
 * retry, a lost notification). After 24 hours of failing the webhook is disabled and the agent
 * gets `webhook.disabled`.
 */
export class WebhookDelivery extends FeedFollower {
  /** This process, as named in the leases it holds. */
  private readonly holder = `${process.pid}-${randomUUID()}`;
  private readonly retries = new Map<string, () => void>();

  constructor(
    services: Services,
    private readonly settings: WebhookSettings,
    private readonly secrets: SecretBox,
    log: (message: string) => void,
  ) {
    super(services, log);
  }

  /** The lease: longer than one attempt can take, so that no other process steps in meanwhile. */
  private leaseMs(): number {
    return this.settings.timeoutMs * 2 + 60_000;
  }

  protected followedAgents(): Promise<readonly string[]> {
    return liveWebhookAgents(this.services.driver);
  }

  /** Every webhook whose next attempt is due, wherever it failed last. */
  protected dueAfterSync(): Promise<readonly string[]> {
    return dueWebhookAgents(this.services.driver, new Date(this.services.clock.now()));
  }

  protected failure(agentId: string | null, error: unknown): string {
    return agentId === null
      ? `webhooks: the agents with webhooks could not be read: ${String(error)}`
      : `webhooks: delivering to the webhook of ${agentId} failed: ${String(error)}`;
  }

  /** A webhook was set (here): listen, and deliver what comes. */
  watch(agentId: string): void {
    this.follow(agentId);
    this.kick(agentId);
  }

  override async stop(): Promise<void> {
    // Aborted first: a failure recorded from now on sets no retry.
    this.stopping.abort();
    for (const cancel of this.retries.values()) cancel();
    this.retries.clear();
    await super.stop();
  }

  /** Takes the lease and delivers in order until the feed is done or an attempt fails. */
  protected async pass(agentId: string): Promise<void> {
    const db = this.services.driver;
    const now = () => this.services.clock.now();
    const webhook = await claimWebhook(
      db,
      agentId,
      this.holder,
      new Date(now()),
      new Date(now() + this.leaseMs()),
    );
    if (!webhook) return;
    this.retries.get(agentId)?.();
    this.retries.delete(agentId);
    // Whether the lease was let go already (by a failure's record, or with the last change).
    let released = false;
    try {
      let secret: string;
      try {
        secret = this.secrets.open(webhook.secretCipher, agentId);
      } catch (error) {
        released = true;
        return await this.failed(webhook, (error as Error).message);
      }
      let from = webhook.deliveredSeq;
      for (;;) {
        const rows = await changesAfter(this.services, agentId, from, BATCH);
        if (rows.length === 0) return;
        // A short page is the end of the feed: its last step lets the lease go too. A change
        // committed meanwhile has kicked this agent again, and the next pass takes it.
        const end = rows.length < BATCH ? (rows.at(-1) as StoredChangeRow).seq : null;
        let skipped: number | null = null;
        for (const row of rows) {
          if (!wanted(webhook, row)) {
            skipped = row.seq;
            continue;
          }
          const outcome = await this.attempt(webhook, secret, row);
          if (!outcome.ok) {
            // What was skipped before this change is behind us whatever happens to it.
            if (skipped !== null) await this.advance(webhook, skipped, false);
            released = true;
            return await this.failed(webhook, outcome.error);
          }
          skipped = null;
          const last = row.seq === end;
          if (!(await this.advance(webhook, row.seq, last))) return;
          if (last) released = true;
        }
        if (skipped !== null) {
          if (!(await this.advance(webhook, skipped, skipped === end))) return;
          if (skipped === end) released = true;
        }
        if (end !== null || this.stopping.signal.aborted) return;
        from = (rows.at(-1) as StoredChangeRow).seq;
      }
    } finally {
      if (!released) await releaseWebhook(db, agentId, this.holder);
    }
  }

  private advance(webhook: WebhookRow, seq: number, release: boolean): Promise<boolean> {
    const now = this.services.clock.now();
    return markDelivered(
      this.services.driver,
      webhook.agentId,
      this.holder,
      webhook,
      seq,
      new Date(now + this.leaseMs()),
      release,
    );
  }

  private async attempt(webhook: WebhookRow, secret: string, row: StoredChangeRow) {
    const event = row.event;
    // `agent_id` names whose webhook this is, under both signatures: the Ed25519 one alone
    // proves only that the service sent it, and one service key signs every agent's deliveries.
    const body = JSON.stringify({
      type: event.type,
      timestamp: event.at,
      agent_id: webhook.agentId,
      data: event,
    });
    const key = await this.services.files.signingKeys.current(this.services.driver);
    const headers = signedHeaders(
      event.event_id,
      Math.floor(this.services.clock.now() / 1000),
      body,
      secret,
      key,
    );
    return postWebhook(
      webhook.url,
      body,
      headers,
      this.settings,
      this.settings.timeoutMs,
      this.stopping.signal,
    );
  }

  /**
   * Records a failed attempt and sets the retry on the service clock; after 24 hours of failing,
   * disables the webhook and tells the agent, in one commit.
   */
  private async failed(webhook: WebhookRow, error: string): Promise<void> {
    const at = this.services.clock.now();
    const attempts = webhook.attempts + 1;
    const delay = retryDelayMs(attempts);
    const recorded = await markFailed(this.services.driver, webhook.agentId, this.holder, webhook, {
      at: new Date(at),
      nextAttemptAt: new Date(at + delay),
      error,
    });
    if (!recorded) return;
    if (at - recorded.failingSince.getTime() >= GIVE_UP_AFTER_MS) {
      await this.disable(webhook, recorded.failingSince, error);
      return;
    }
    if (this.stopping.signal.aborted) return;
    this.retries.get(webhook.agentId)?.();
    this.retries.set(
      webhook.agentId,
      this.services.clock.setTimeout(() => {
        this.retries.delete(webhook.agentId);
        this.kick(webhook.agentId);
      }, delay),
    );
  }

  private async disable(webhook: WebhookRow, failingSince: Date, error: string): Promise<void> {
    const at = new Date(this.services.clock.now());
    await this.services.commit(async (tx) => {
      const disabled = await disableWebhook(tx, webhook.agentId, webhook, at);
      return {
        result: undefined,
        changes: disabled
          ? [
              {
                agentId: webhook.agentId,
                type: 'webhook.disabled' as const,
                data: {
                  url: webhook.url,
                  failing_since: failingSince.toISOString(),
                  last_error: error,
                },
              },
            ]
          : [],
      };
    });
    this.log(`webhooks: the webhook of ${webhook.agentId} failed for 24 hours and was disabled`);
  }
}

/** Whether the webhook takes this change: every type, or those it named (pings always). */
function wanted(webhook: WebhookRow, row: StoredChangeRow): boolean {
  return (
    webhook.events === null ||
    row.event.type === 'webhook.test' ||
    webhook.events.includes(row.event.type)
  );
}
