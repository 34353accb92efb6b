import { readFeedHead } from '../../storage/kernel/changes.ts';
import {
  markPushed,
  mailPushState,
  pushingAgents,
  setMailPushing,
} from '../../storage/mail-push.ts';
import { changesAfter } from '../feed/feed.ts';
import type { Services } from '../kernel/services.ts';
import { mailYaml } from './mail-yaml.ts';
import { enqueueMail } from './outbox.ts';

declare module '../kernel/services.ts' {
  interface Services {
    /** This process's pushing of changes by email; null without mail settings. */
    readonly mailPush: MailPush | null;
  }
}

/** How often each process reads which agents push changes (pushing switched on elsewhere). */
const RESYNC_MS = 60_000;

/** Changes one pass mails at most (the next signal, or the next pass, sends the rest). */
const BATCH = 50;

/**
 * Each new change of an agent that asked for it (set_mail_push), mailed to the address it signed
 * up from as it happens: this process listens to the change hub for those agents, and every
 * change is queued once whichever process sees it (its Message-ID is `change-<event_id>`).
 */
export class MailPush {
  private readonly listening = new Map<string, () => void>();
  /** One pass per agent at a time; a signal during it asks for one more. */
  private readonly running = new Map<string, { again: boolean; done: Promise<void> }>();

  constructor(
    private readonly services: Services,
    private readonly log: (message: string) => void,
  ) {}

  /** Looks again for agents whose pushing another process switched on (or off). */
  private resync: NodeJS.Timeout | null = null;

  /**
   * Listens for every agent with pushing on, and sends at once what came while no process
   * listened (a restart). The hub also carries other processes' changes, so any one process
   * listening covers an agent; each looks again every minute, so an agent whose pushing was
   * switched on in a process that has since stopped is taken up by the others.
   */
  async start(): Promise<void> {
    await this.sync();
    this.resync = setInterval(() => {
      this.sync().catch((error: unknown) =>
        this.log(`mail: the agents that push changes could not be read: ${String(error)}`),
      );
    }, RESYNC_MS).unref();
  }

  /** Listens for the agents that push now, and stops listening for those that no longer do. */
  async sync(): Promise<void> {
    const pushing = new Set(await pushingAgents(this.services.db()));
    for (const agentId of pushing) {
      if (this.listening.has(agentId)) continue;
      this.listen(agentId);
      this.kick(agentId);
    }
    for (const [agentId, stop] of this.listening) {
      if (pushing.has(agentId)) continue;
      stop();
      this.listening.delete(agentId);
    }
  }

  /** Switches pushing; false when the agent has no mail account. */
  async set(agentId: string, push: boolean): Promise<boolean> {
    const db = this.services.db();
    const head = (await readFeedHead(db, agentId))?.lastSeq ?? 0;
    if (!(await setMailPushing(db, agentId, push, head))) return false;
    if (push) this.listen(agentId);
    else {
      this.listening.get(agentId)?.();
      this.listening.delete(agentId);
    }
    return true;
  }

  /** Resolves when no pass is running (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()].map((r) => r.done));
  }

  async stop(): Promise<void> {
    if (this.resync) clearInterval(this.resync);
    this.resync = null;
    for (const stop of this.listening.values()) stop();
    this.listening.clear();
    await this.idle();
  }

  private listen(agentId: string): void {
    if (this.listening.has(agentId)) return;
    this.listening.set(
      agentId,
      this.services.hub.subscribe(agentId, () => this.kick(agentId)),
    );
  }

  private kick(agentId: string): void {
    const running = this.running.get(agentId);
    if (running) {
      running.again = true;
      return;
    }
    const state = { again: false, done: Promise.resolve() };
    state.done = (async () => {
      try {
        do {
          state.again = false;
          await this.pass(agentId);
        } while (state.again);
      } catch (error) {
        this.log(`mail: pushing changes of ${agentId} failed: ${String(error)}`);
      } finally {
        this.running.delete(agentId);
      }
    })();
    this.running.set(agentId, state);
  }

  private async pass(agentId: string): Promise<void> {
    const db = this.services.db();
    const state = await mailPushState(db, agentId);
    if (!state?.push) return;
    const rows = await changesAfter(this.services, agentId, state.pushedSeq, BATCH);
    for (const row of rows) {
      await enqueueMail(db, this.services, {
        kind: 'change',
        agentId,
        to: state.senderAddress,
        subject: `change: ${row.event.type}`,
        text: mailYaml(row.event),
        idKey: `change-${row.event.event_id}`,
        autoSubmitted: 'auto-generated',
      });
      await markPushed(db, agentId, row.seq);
    }
    if (rows.length === BATCH) await this.pass(agentId);
  }
}
