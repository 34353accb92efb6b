import { randomUUID } from 'node:crypto';
import { ServiceError } from '../../protocol/errors.ts';
import type { ChangeDraft } from '../../storage/changes.ts';
import { answerFeedback as recordAnswer, insertFeedback } from '../../storage/feedback.ts';
import type { Handler } from './types.ts';

/**
 * Feedback goes to the operator's own feed (`feedback.submitted`), and, when sent with a
 * token, a receipt goes to the sender's (`feedback.received`); the operator's answer comes
 * back to the sender as `feedback.answered`.
 */
export const leaveFeedback: Handler<'leave_feedback'> = async ({ services, agent }, input) => {
  const feedbackId = randomUUID();
  const changes: ChangeDraft[] = [
    {
      agentId: services.operatorId,
      type: 'feedback.submitted',
      ...(agent ? { actor: agent.asActor } : {}),
      data: {
        feedback_id: feedbackId,
        category: input.category,
        message: input.message,
        anonymous: !agent,
      },
    },
  ];
  if (agent) {
    changes.push({
      agentId: agent.agentId,
      type: 'feedback.received',
      actor: agent.asActor,
      data: {
        feedback_id: feedbackId,
        category: input.category,
        note: 'The operator reads feedback; an answer arrives here as feedback.answered.',
      },
    });
  }
  await services.commit(async (tx) => {
    await insertFeedback(tx, {
      feedbackId,
      agentId: agent?.agentId ?? null,
      category: input.category,
      message: input.message,
    });
    return { result: undefined, changes };
  });
  return { feedback_id: feedbackId };
};

export const answerFeedback: Handler<'answer_feedback'> = async ({ services, agent }, input) => {
  // Feedback is the operator's to see: to anyone else it does not exist.
  const notFound = new ServiceError(
    'not_found',
    'There is no feedback with that id that you may answer.',
  );
  if (!agent.record.isOperator) throw notFound;
  return services.commit(async (tx) => {
    const answered = await recordAnswer(tx, input.feedback_id, input.answer);
    if (!answered) throw notFound;
    const result = {
      feedback_id: input.feedback_id,
      answered_at: answered.answeredAt.toISOString(),
      delivered: answered.agentId !== null,
    };
    if (answered.agentId === null) return { result };
    return {
      result,
      changes: [
        {
          agentId: answered.agentId,
          type: 'feedback.answered',
          actor: agent.asActor,
          data: { feedback_id: input.feedback_id, answer: input.answer, from_operator: true },
        },
      ],
    };
  });
};
