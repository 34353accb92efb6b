import { ServiceError } from '../../protocol/errors.ts';

export interface SqlSlotLimits {
  /** Agents' queries that run at once in this process: its connections for agents' SQL. */
  running: number;
  /** Queries one agent may have running or waiting at once; past it, 429 `too_many_queries`. */
  perAgent: number;
  /** How long a query may wait for a slot before the index counts as busy (429 `rate_limited`). */
  maxWaitMs: number;
  /** Queries that may wait at once, all agents together; past it, 429 `rate_limited` at once. */
  maxWaiting: number;
}

/** Queries one agent may have running or waiting at once. */
export const SQL_QUERIES_PER_AGENT = 2;

/** Queries waiting at once for a slot, all agents together (sybils included). */
export const SQL_MAX_WAITING = 200;

/** What happened to one query of `agentId` in the slots, in the order it happened. */
export interface SqlSlotEvent {
  kind: 'waiting' | 'started' | 'ended' | 'refused';
  agentId: string;
}

interface Waiter {
  agentId: string;
  /** Arrival order, for ties. */
  arrival: number;
  grant: (release: () => void) => void;
  refuse: (error: ServiceError) => void;
  timer: NodeJS.Timeout;
}

/**
 * The slots agents' index queries run in, shared fairly. Each query takes a slot for as long as
 * it runs (at most its time limit); there are as many as the process has connections for
 * agents' SQL (one on PGlite), so a query never waits unseen behind others in the driver.
 *
 * Fair: one agent may hold at most `perAgent` queries running or waiting (the next is refused
 * at once, 429 `too_many_queries`), and when a slot frees, it goes to the waiting query whose
 * agent has the fewest queries running, then the one whose agent started one least recently,
 * then the one whose agent has fewer in flight, then the first to come. So an agent with
 * nothing in flight takes the first slot that frees after it came, ahead of every agent that
 * has a query running, has started one, or has more waiting, however many greedy agents there
 * are: it waits for one of the queries running when it came to end, never for those waiting.
 * Only when a query has waited `maxWaitMs` (every slot busy with other agents that had nothing
 * running either: the index is saturated) is it refused, 429 `rate_limited` with Retry-After.
 */
export class SqlSlots {
  private running = 0;
  /** Per agent with anything in flight: queries running, and all running or waiting. */
  private readonly agents = new Map<
    string,
    { running: number; inFlight: number; lastStart: number }
  >();
  private readonly waiting: Waiter[] = [];
  private arrivals = 0;
  private starts = 0;
  private readonly watchers = new Set<(event: SqlSlotEvent) => void>();

  constructor(readonly limits: SqlSlotLimits) {}

  /**
   * Calls `watcher` with each event from now on, synchronously as it happens (tests wait for
   * the state they need instead of guessing it from answers); returns how to stop.
   */
  watch(watcher: (event: SqlSlotEvent) => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  /**
   * Takes a slot for one query of `agentId`, waiting for one fairly; or throws. The caller must
   * call the returned function once the query ended.
   */
  acquire(agentId: string): Promise<() => void> {
    const agent = this.agents.get(agentId) ?? { running: 0, inFlight: 0, lastStart: 0 };
    if (agent.inFlight >= this.limits.perAgent) {
      this.tell('refused', agentId);
      return Promise.reject(
        new ServiceError(
          'too_many_queries',
          `You have ${agent.inFlight} index queries running or waiting; one agent may have ` +
            `${this.limits.perAgent} at once. Wait for one to answer, then send the next.`,
          { limit: this.limits.perAgent, retry_after_seconds: 1 },
          { 'retry-after': '1' },
        ),
      );
    }
    if (this.running < this.limits.running && this.waiting.length === 0) {
      this.agents.set(agentId, agent);
      agent.inFlight++;
      return Promise.resolve(this.start(agentId));
    }
    if (this.waiting.length >= this.limits.maxWaiting) {
      this.tell('refused', agentId);
      return Promise.reject(this.busy());
    }
    this.agents.set(agentId, agent);
    agent.inFlight++;
    return new Promise((grant, refuse) => {
      const waiter: Waiter = {
        agentId,
        arrival: ++this.arrivals,
        grant,
        refuse,
        timer: setTimeout(() => {
          const at = this.waiting.indexOf(waiter);
          if (at < 0) return;
          this.waiting.splice(at, 1);
          this.leave(agentId);
          this.tell('refused', agentId);
          refuse(this.busy());
        }, this.limits.maxWaitMs),
      };
      this.waiting.push(waiter);
      this.tell('waiting', agentId);
    });
  }

  /** Slots taken now, and queries waiting (tests and figures). */
  counts(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  private start(agentId: string): () => void {
    const agent = this.agents.get(agentId);
    if (agent) {
      agent.running++;
      agent.lastStart = ++this.starts;
    }
    this.running++;
    this.tell('started', agentId);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      const own = this.agents.get(agentId);
      if (own) own.running--;
      this.leave(agentId);
      this.tell('ended', agentId);
      this.next();
    };
  }

  private tell(kind: SqlSlotEvent['kind'], agentId: string): void {
    for (const watcher of this.watchers) watcher({ kind, agentId });
  }

  /** One query of `agentId` is no longer in flight. */
  private leave(agentId: string): void {
    const agent = this.agents.get(agentId);
    if (!agent) return;
    agent.inFlight--;
    if (agent.inFlight <= 0) this.agents.delete(agentId);
  }

  /** Gives free slots to the waiting queries that come first by the fair order. */
  private next(): void {
    while (this.running < this.limits.running && this.waiting.length > 0) {
      let best = 0;
      for (let i = 1; i < this.waiting.length; i++) {
        if (this.before(this.waiting[i]!, this.waiting[best]!)) best = i;
      }
      const [chosen] = this.waiting.splice(best, 1);
      if (!chosen) return;
      clearTimeout(chosen.timer);
      chosen.grant(this.start(chosen.agentId));
    }
  }

  /** Whether waiting query `a` gets a slot before `b`. */
  private before(a: Waiter, b: Waiter): boolean {
    const agentA = this.agents.get(a.agentId);
    const agentB = this.agents.get(b.agentId);
    const runningA = agentA?.running ?? 0;
    const runningB = agentB?.running ?? 0;
    if (runningA !== runningB) return runningA < runningB;
    const lastA = agentA?.lastStart ?? 0;
    const lastB = agentB?.lastStart ?? 0;
    if (lastA !== lastB) return lastA < lastB;
    // Neither has started one lately: the agent with fewer queries in flight first.
    const inFlightA = agentA?.inFlight ?? 0;
    const inFlightB = agentB?.inFlight ?? 0;
    if (inFlightA !== inFlightB) return inFlightA < inFlightB;
    return a.arrival < b.arrival;
  }

  private busy(): ServiceError {
    // A slot frees within one time limit of the queries running now.
    const retryAfter = Math.max(1, Math.ceil(this.limits.maxWaitMs / 1000));
    return new ServiceError(
      'rate_limited',
      `The index is busy: every slot for agents' queries is taken and ${this.waiting.length} ` +
        `queries are waiting. Retry after ${retryAfter} s.`,
      { retry_after_seconds: retryAfter },
      { 'retry-after': String(retryAfter) },
    );
  }
}
