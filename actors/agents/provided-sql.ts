import type { AccountPresenceSql, PendingKnocksSql } from '../../storage/agents/account-counts.ts';

/**
 * What the account (`whoami`) reads of the capabilities built on agents, in its one statement:
 * chat and presence build on agents (a knock names its agents), so agents import nothing of
 * them. Each fills its port at start-up (`services.provide`) with the SQL its storage exports.
 */
declare module '../kernel/services.ts' {
  interface Services {
    /** The agent's pending knocks and their first expiry: chat's pendingKnocksToSql. */
    readonly pendingKnocksSql: PendingKnocksSql;
    /** The agent's presence settings and responsiveness: presence's accountPresenceSql. */
    readonly accountPresenceSql: AccountPresenceSql;
  }
}
