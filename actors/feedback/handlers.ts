import { randomUUID } from 'node:crypto';
import type { ChangeDraft } from '../../storage/kernel/changes.ts';
import type { Transaction } from '../../storage/driver.ts';
import { answerFeedback as recordAnswer, insertFeedback } from '../../storage/feedback.ts';
import { notFound } from '../kernel/principal.ts';
import type { Handler } from '../kernel/handler.ts';
import { revokeLeakedTokens, tokensInText } from '../agents/leaked-tokens.ts';
import { abuseLinks } from '../moderation/abuse-links.ts';

/**
 * Feedback goes to the operator's own feed (`feedback.submitted`), and, when sent with a
 * token, a receipt goes to the sender's (`feedback.received`); the operator's answer comes
 * back to the sender as `feedback.answered`.
 */
export const leaveFeedback: Handler<'leave_feedback'> = async ({ services, principal }, input) => {
  const feedbackId = randomUUID();
  const changes: ChangeDraft[] = [
    {
      agentId: services.operatorId,
      type: 'feedback.submitted',
      ...(principal ? { actor: principal.agent } : {}),
      data: {
        feedback_id: feedbackId,
        category: input.category,
        message: input.message,
        anonymous: !principal,
        // An abuse report links what it names, so the operator can act (moderation).
        ...(input.category === 'abuse'
          ? { links: await abuseLinks(services.db(), services.config.baseUrl, input.message) }
          : {}),
      },
    },
  ];
  const record = {
    feedbackId,
    agentId: principal?.agentId ?? null,
    category: input.category,
    message: input.message,
  };
  // The operator reads feedback: a live token in it is revoked as it is sent.
  const tokens = tokensInText(input.message);
  const revokeLeaked = (tx: Transaction) =>
    revokeLeakedTokens(tx, services, tokens, () => ({ kind: 'feedback', feedback_id: feedbackId }));
  if (!principal) {
    await services.commit(async (tx) => {
      await insertFeedback(tx, record);
      const leaked = await revokeLeaked(tx);
      return {
        result: undefined,
        changes: [...changes, ...leaked.changes],
        afterCommit: leaked.afterCommit,
      };
    });
    return { feedback_id: feedbackId };
  }
  changes.push({
    agentId: principal.agentId,
    type: 'feedback.received',
    actor: principal.agent,
    data: {
      feedback_id: feedbackId,
      category: input.category,
      note: 'The operator reads feedback; an answer arrives here as feedback.answered.',
    },
  });
  // Through the sender's mailbox, as every write of an agent goes.
  await services.agents.command(principal.agentId, async (_sender, tx) => {
    await insertFeedback(tx, record);
    const leaked = await revokeLeaked(tx);
    return {
      result: undefined,
      changes: [...changes, ...leaked.changes],
      afterCommit: leaked.afterCommit,
    };
  });
  return { feedback_id: feedbackId };
};

export const answerFeedback: Handler<'answer_feedback'> = async (
  { services, principal },
  input,
) => {
  // Feedback is the operator's to see: to anyone else it does not exist.
  if (!principal.isOperator) throw notFound('feedback');
  const answered = await services.agents.command(principal.agentId, async (_operator, tx) => {
    const row = await recordAnswer(tx, input.feedback_id, input.answer);
    if (!row) throw notFound('feedback');
    const result = {
      feedback_id: input.feedback_id,
      answered_at: row.answeredAt.toISOString(),
      delivered: row.agentId !== null,
    };
    if (row.agentId === null) return { result };
    return {
      result,
      changes: [
        {
          agentId: row.agentId,
          type: 'feedback.answered',
          actor: principal.agent,
          data: { feedback_id: input.feedback_id, answer: input.answer, from_operator: true },
        },
      ],
    };
  });
  if (!answered) throw notFound('feedback');
  return answered;
};
