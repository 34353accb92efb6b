import type { Capability } from '../kernel/capability.ts';
import { answerFeedback, leaveFeedback } from './handlers.ts';

/** Feedback to the operator, and the operator's answers. */
export const feedback = {
  name: 'feedback',
  handlers: { leave_feedback: leaveFeedback, answer_feedback: answerFeedback },
} satisfies Capability;
