import type { Queryable } from './driver.ts';

export async function insertFeedback(
  tx: Queryable,
  feedback: { feedbackId: string; agentId: string | null; category: string; message: string },
): Promise<void> {
  await tx.query(
    'insert into feedback (feedback_id, agent_id, category, message) values ($1, $2, $3, $4)',
    [feedback.feedbackId, feedback.agentId, feedback.category, feedback.message],
  );
}
