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

/** Records the answer; returns the sender (null when anonymous), or undefined when unknown. */
export async function answerFeedback(
  tx: Queryable,
  feedbackId: string,
  answer: string,
): Promise<{ agentId: string | null; answeredAt: Date } | undefined> {
  const [row] = await tx.query<{ agent_id: string | null; answered_at: Date }>(
    `update feedback set answer = $2, answered_at = now() where feedback_id = $1
     returning agent_id, answered_at`,
    [feedbackId, answer],
  );
  return row ? { agentId: row.agent_id, answeredAt: row.answered_at } : undefined;
}
