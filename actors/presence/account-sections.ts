import type { AccountSection } from '../kernel/account-sections.ts';
import type { AccountPresence } from '../../storage/presence/account.ts';
import { presenceView, responsivenessView } from './views.ts';

declare module '../kernel/agent-counts.ts' {
  interface AccountCounts {
    /** What the account shows of presence (storage/presence/account.ts), as counted. */
    presence: unknown;
  }
}

const shown = (presence: unknown) => presence as AccountPresence;

/**
 * The caller's own presence in its account (`whoami`): online, since it is calling, and seen
 * in the minute it was counted (counted again each minute), unless it hides them; its note.
 */
const accountPresence = {
  key: 'presence',
  show: ({ presence }) => {
    const own = shown(presence);
    return presenceView(
      { visible: own.visible, note: own.note, lastSeenAt: null },
      { held: 1, lastSeenMs: new Date(own.counted_at).getTime() },
      new Date(own.counted_at).getTime(),
    );
  },
} satisfies AccountSection;

/** The caller's own responsiveness, as others see it. */
const accountResponsiveness = {
  key: 'responsiveness',
  show: ({ presence }) => {
    const own = shown(presence);
    return responsivenessView({
      knocksAnswered: own.knocks_answered,
      knockAnswerMedianSeconds: own.knock_answer_median_seconds,
      replies: own.replies,
      replyMedianSeconds: own.reply_median_seconds,
    });
  },
} satisfies AccountSection;

export const presenceAccountSections = [accountPresence, accountResponsiveness];
