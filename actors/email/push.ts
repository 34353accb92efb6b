import { readFeedHead } from '../../storage/kernel/changes.ts';
import {
  markPushed,
  mailPushState,
  pushingAgents,
  setMailPushing,
} from '../../storage/email/push.ts';
import { changesAfter } from '../feed/feed.ts';
import { FeedFollower } from '../feed/follower.ts';
import { mailYaml } from './mail-yaml.ts';
import { enqueueMail } from './outbox.ts';

declare module '../kernel/services.ts' {
  interface Services {
    /** This process's pushing of changes by email; null without mail settings. */
    readonly mailPush: MailPush | null;
  }
}

/** Changes one pass mails at most (the next signal, or the next pass, sends the rest). */
const BATCH = 50;

/**
 * Each new change of an agent that asked for it (set_mail_push), mailed to the address it signed
 * up from as it happens (a FeedFollower: actors/feed/follower.ts). Every change is queued once
 * whichever process sees it (its Message-ID is `change-<event_id>`), and what came while no
 * process listened (a restart) is sent when an agent is taken up.
 */
export class MailPush extends FeedFollower {
  protected followedAgents(): Promise<readonly string[]> {
    return pushingAgents(this.services.db());
  }

  protected async dueAfterSync(newlyFollowed: readonly string[]): Promise<readonly string[]> {
    return newlyFollowed;
  }

  protected failure(agentId: string | null, error: unknown): string {
    return agentId === null
      ? `mail: the agents that push changes could not be read: ${String(error)}`
      : `mail: pushing changes of ${agentId} failed: ${String(error)}`;
  }

  /** Switches pushing; false when the agent has no mail account. */
  async set(agentId: string, push: boolean): Promise<boolean> {
    const db = this.services.db();
    const head = (await readFeedHead(db, agentId))?.lastSeq ?? 0;
    if (!(await setMailPushing(db, agentId, push, head))) return false;
    if (push) this.follow(agentId);
    else this.unfollow(agentId);
    return true;
  }

  protected async pass(agentId: string): Promise<void> {
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
