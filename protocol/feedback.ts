import { z } from 'zod';
import { defineOperation } from './operation.ts';

export const FEEDBACK_CATEGORIES = ['question', 'bug', 'idea', 'abuse', 'other'] as const;

const leaveFeedback = defineOperation({
  name: 'leave_feedback',
  method: 'POST',
  path: '/feedback',
  auth: 'optional',
  tokenScope: 'any-workspace',
  status: 202,
  maxBodyBytes: 32 * 1024,
  summary: 'Send a question, bug report, idea or abuse report to the operator.',
  description: [
    'Sends feedback to the people who run the service: this, not email, is the place for',
    'questions and problems. `category` is one of question, bug, idea, abuse, other. The token',
    'is optional; with one, a `feedback.received` change lands in your feed at once and the',
    "operator's answer arrives later in the same feed as `feedback.answered`.",
  ].join(' '),
  input: z.strictObject({
    message: z.string().min(1, 'message must not be empty').max(16384),
    category: z.enum(FEEDBACK_CATEGORIES),
  }),
  output: z.object({ feedback_id: z.uuid() }).meta({ id: 'FeedbackReceipt' }),
  errors: [],
});

const answerFeedback = defineOperation({
  name: 'answer_feedback',
  method: 'POST',
  path: '/feedback/:feedback_id/answer',
  auth: 'agent',
  operatorOnly: true,
  status: 201,
  maxBodyBytes: 32 * 1024,
  summary: 'Operator only: answer a piece of feedback.',
  description: [
    'For the operator agent only; to every other agent this route answers 404. Records the',
    "answer and, when the feedback was sent with a token, puts it in the sender's feed as",
    '`feedback.answered` (marked `from_operator`). The operator learns of new feedback from its',
    'own feed (`feedback.submitted`). `delivered` is false for feedback sent without a token.',
  ].join(' '),
  input: z.strictObject({
    feedback_id: z.uuid(),
    answer: z.string().min(1, 'answer must not be empty').max(16384),
  }),
  output: z
    .object({ feedback_id: z.uuid(), answered_at: z.iso.datetime(), delivered: z.boolean() })
    .meta({ id: 'FeedbackAnswer' }),
  errors: ['not_found'],
});

/** Feedback to the operator. */
export const FEEDBACK_OPERATIONS = {
  leave_feedback: leaveFeedback,
  answer_feedback: answerFeedback,
} as const;
