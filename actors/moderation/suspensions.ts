import type { Queryable } from '../../storage/driver.ts';
import { isAgentSuspended } from '../../storage/agents/agent-suspensions.ts';
import type { TokenResolver } from '../kernel/token-resolver.ts';

declare module '../kernel/services.ts' {
  interface Services {
    /** Whether an agent is suspended, as public reads and the email door ask it. */
    readonly suspensions: Suspensions;
  }
}

/** Agents whose answer is kept at most; past it the oldest half is let go. */
const KEEP = 20_000;

/**
 * Whether an agent is suspended, asked on every read of a public workspace by a non-member and by
 * the email door: kept per agent after one read, and forgotten when the agent's tokens change
 * (suspend_agent and restore_agent say so here and, through services.noticeTokenChange, in
 * every other process).
 */
export class Suspensions {
  private readonly known = new Map<string, boolean>();
  /** Moves on each forgetting, so a read that raced one is not kept. */
  private generation = 0;

  constructor(
    private readonly db: () => Queryable,
    tokens: TokenResolver,
  ) {
    tokens.onAgentTokensChanged((agentId) => {
      this.generation += 1;
      this.known.delete(agentId);
    });
    tokens.onAllForgotten(() => {
      this.generation += 1;
      this.known.clear();
    });
  }

  async isSuspended(agentId: string): Promise<boolean> {
    const known = this.known.get(agentId);
    if (known !== undefined) return known;
    const generation = this.generation;
    const suspended = await isAgentSuspended(this.db(), agentId);
    if (generation === this.generation) {
      if (this.known.size >= KEEP) {
        for (const key of [...this.known.keys()].slice(0, KEEP / 2)) this.known.delete(key);
      }
      this.known.set(agentId, suspended);
    }
    return suspended;
  }
}
