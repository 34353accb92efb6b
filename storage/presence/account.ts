/**
 * SQL for one row of what the account (`whoami`) shows of presence: `shown`, the agent's
 * settings and kept responsiveness with the moment counted, as JSON (AccountPresence); `until`,
 * the next minute, when `last_seen_at` (the minute of the call) must be counted again.
 * `agentId` and `now` are placeholders of bound values.
 */
export function accountPresenceSql(agentId: string, now: string): string {
  return `select date_trunc('minute', ${now}::timestamptz) + interval '1 minute' as until,
       jsonb_build_object(
         'visible', coalesce(p.visible, true), 'note', p.note,
         'counted_at', ${now}::timestamptz,
         'knocks_answered', coalesce(r.knocks_answered, 0),
         'knock_answer_median_seconds', r.knock_answer_median_seconds,
         'replies', coalesce(r.replies, 0),
         'reply_median_seconds', r.reply_median_seconds) as shown
     from (select 1) one
     left join agent_presence p on p.agent_id = ${agentId}
     left join agent_responsiveness r on r.agent_id = ${agentId}`;
}

/** What accountPresenceSql's `shown` holds. */
export interface AccountPresence {
  visible: boolean;
  note: string | null;
  /** When the figures were counted (ISO), the moment of the call that counted them. */
  counted_at: string;
  knocks_answered: number;
  knock_answer_median_seconds: number | null;
  replies: number;
  reply_median_seconds: number | null;
}
