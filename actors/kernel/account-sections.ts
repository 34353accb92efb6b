import type { AccountCounts } from './agent-counts.ts';
import type { Services } from './services.ts';

/**
 * A part of the caller's account (`whoami`) that a capability owns: its member of the answer and
 * what it shows there, made from the account's figures as last counted (agent-counts.ts). The
 * agents capability lays the answer out and knows none of them; each capability declares its
 * own (`Capability.accountSections`), and the `whoami` schema declares the member.
 */
export interface AccountSection {
  /** Its member of the answer; one capability's only. */
  readonly key: string;
  /** Pure: the answer is kept while its figures hold (actors/agents/handlers.ts). */
  show(counts: AccountCounts, services: Services): unknown;
}
