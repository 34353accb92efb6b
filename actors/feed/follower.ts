import type { Services } from '../kernel/services.ts';

/** How often each process reads again which agents are followed (switched on elsewhere). */
const RESYNC_MS = 60_000;

/**
 * What sends an agent's feed somewhere as it grows (mail push, webhook delivery): it listens to
 * the change hub for the agents it follows (the hub carries other processes' commits too, so one
 * process listening covers an agent), and runs one pass per agent at a time over what is new; a
 * change during a pass asks for one more. Every process reads again every minute which agents
 * are followed, so an agent switched on in a process that has since stopped is taken up by the
 * others. What a pass sends and where it keeps its place is the subclass's.
 */
export abstract class FeedFollower {
  private readonly listening = new Map<string, () => void>();
  /** One pass per agent at a time; a signal during it asks for one more. */
  private readonly running = new Map<string, { again: boolean; done: Promise<void> }>();
  private resync: NodeJS.Timeout | null = null;
  /** Aborted by stop(): no pass starts, and a running one ends after its step. */
  protected readonly stopping = new AbortController();

  constructor(
    protected readonly services: Services,
    protected readonly log: (message: string) => void,
  ) {}

  /** The agents followed now, as storage says. */
  protected abstract followedAgents(): Promise<readonly string[]>;

  /** Sends what is new of the agent's feed, from where it left off. */
  protected abstract pass(agentId: string): Promise<void>;

  /** The log line of a pass that threw, or of a resync that could not read storage. */
  protected abstract failure(agentId: string | null, error: unknown): string;

  /** The agents, of those just read, to send to at once (beside those with news). */
  protected abstract dueAfterSync(newlyFollowed: readonly string[]): Promise<readonly string[]>;

  async start(): Promise<void> {
    await this.sync();
    this.resync = setInterval(() => {
      this.sync().catch((error: unknown) => this.log(this.failure(null, error)));
    }, RESYNC_MS).unref();
  }

  /** Listens for the agents followed now, stops for the others, and sends what is due. */
  async sync(): Promise<void> {
    if (this.stopping.signal.aborted) return;
    const followed = new Set(await this.followedAgents());
    const newly: string[] = [];
    for (const agentId of followed) {
      if (this.listening.has(agentId)) continue;
      this.follow(agentId);
      newly.push(agentId);
    }
    for (const agentId of [...this.listening.keys()]) {
      if (!followed.has(agentId)) this.unfollow(agentId);
    }
    for (const agentId of await this.dueAfterSync(newly)) this.kick(agentId);
  }

  /** Listens for the agent's changes (at once here; other processes at their next sync). */
  protected follow(agentId: string): void {
    if (this.listening.has(agentId)) return;
    this.listening.set(
      agentId,
      this.services.hub.subscribe(agentId, () => this.kick(agentId)),
    );
  }

  protected unfollow(agentId: string): void {
    this.listening.get(agentId)?.();
    this.listening.delete(agentId);
  }

  /** Runs a pass for the agent, or asks the running one for one more. */
  kick(agentId: string): void {
    if (this.stopping.signal.aborted) return;
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
        } while (state.again && !this.stopping.signal.aborted);
      } catch (error) {
        this.log(this.failure(agentId, error));
      } finally {
        this.running.delete(agentId);
      }
    })();
    this.running.set(agentId, state);
  }

  /** Resolves when no pass is running (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()].map((r) => r.done));
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    if (this.resync) clearInterval(this.resync);
    this.resync = null;
    for (const agentId of [...this.listening.keys()]) this.unfollow(agentId);
    await this.idle();
  }
}
