import type { Driver, Queryable } from '../storage/driver.ts';
import { findAgent } from '../storage/agents.ts';
import {
  appendChanges,
  CHANGES_CHANNEL,
  notifyChanges,
  readFeedHead,
  type ChangeDraft,
} from '../storage/changes.ts';
import { randomUUID } from 'node:crypto';
import { AgentActor } from './agent-actor.ts';
import { ChangeHub } from './change-hub.ts';
import { ActorRegistry } from './registry.ts';
import { TokenResolver } from './token-resolver.ts';

export interface ServiceConfig {
  baseUrl: string;
  operatorName: string;
  termsUrl: string;
  privacyUrl: string;
  mailJoinAddress: string;
  /** Live actors of each kind kept in memory at most. */
  actorCapacity: number;
}

/**
 * What the operation handlers share: storage, the change hub, the actor registries and config.
 * Made once per server process.
 */
export class Services {
  readonly hub = new ChangeHub();
  readonly agents: ActorRegistry<AgentActor>;
  readonly tokens: TokenResolver;
  /** This process, as named in its notifications to other processes. */
  private readonly instance = randomUUID();
  /** The operator agent's id; set at start-up by ensureOperator, before any request. */
  operatorId = '';

  constructor(
    readonly driver: Driver,
    readonly config: ServiceConfig,
  ) {
    this.agents = new ActorRegistry<AgentActor>(
      async (agentId) => {
        const row = await findAgent(driver, agentId);
        const head = row && (await readFeedHead(driver, agentId));
        if (!row || !head) return null;
        this.hub.seedHead(agentId, head.lastSeq);
        return new AgentActor(row, head.readSeq, driver);
      },
      config.actorCapacity,
      (agentId) => this.hub.forget(agentId),
    );
    this.tokens = new TokenResolver(driver);
  }

  /**
   * The write path: `work` runs in one transaction and returns its result with the changes it
   * records; only after the commit are the changes published. If anything fails, nothing is
   * written and nothing is pushed.
   */
  async commit<R>(
    work: (tx: Queryable) => Promise<{ result: R; changes?: ChangeDraft[] }>,
  ): Promise<R> {
    const { result, stored } = await this.driver.transaction(async (tx) => {
      const { result, changes = [] } = await work(tx);
      const stored = await appendChanges(tx, changes);
      if (this.driver.listen) await notifyChanges(tx, this.instance, stored);
      return { result, stored };
    });
    this.hub.publish(stored);
    return result;
  }

  /**
   * Hears of changes committed by other processes on the same database, so their sockets and
   * waiters here wake too. A lost notification costs latency, never an event: readers re-read.
   */
  async listenToOtherProcesses(): Promise<void> {
    await this.driver.listen?.(CHANGES_CHANNEL, (payload) => {
      const [sender, agentId, seq] = payload.split(' ');
      if (sender === this.instance || !agentId || !seq) return;
      this.hub.signal(agentId, Number(seq));
    });
  }

  /** Lets go of every actor after their mailboxes drain. */
  async flush(): Promise<void> {
    await this.agents.flush();
    this.agents.clear();
  }
}
