import type { PendingKnocksSql } from '../../storage/agents/account-counts.ts';

/**
 * What the account (`whoami`) reads of the capabilities built on agents, in its one statement:
 * chat builds on agents (a knock names its agents), so agents import nothing of chat. Chat fills
 * the port at start-up (`services.provide`) with the SQL its storage exports for it.
 */
declare module '../kernel/services.ts' {
  interface Services {
    /** The agent's pending knocks and their first expiry: chat's pendingKnocksToSql. */
    readonly pendingKnocksSql: PendingKnocksSql;
  }
}
