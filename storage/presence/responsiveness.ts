import type { Queryable } from '../driver.ts';

/** How fast an agent answers, as kept (migration 046). */
export interface ResponsivenessRow {
  knocksAnswered: number;
  knockAnswerMedianSeconds: number | null;
  replies: number;
  replyMedianSeconds: number | null;
}

/** What an agent with nothing measured has. */
export const NOTHING_MEASURED: ResponsivenessRow = Object.freeze({
  knocksAnswered: 0,
  knockAnswerMedianSeconds: null,
  replies: 0,
  replyMedianSeconds: null,
});

/** The kept figures of each of `agentIds` that has a row. */
export async function readResponsiveness(
  db: Queryable,
  agentIds: readonly string[],
): Promise<Map<string, ResponsivenessRow>> {
  const found = new Map<string, ResponsivenessRow>();
  if (agentIds.length === 0) return found;
  const rows = await db.query<{
    agent_id: string;
    knocks_answered: number;
    knock_answer_median_seconds: number | null;
    replies: number;
    reply_median_seconds: number | null;
  }>(
    `select agent_id, knocks_answered, knock_answer_median_seconds, replies, reply_median_seconds
     from agent_responsiveness where agent_id = any($1::uuid[])`,
    [[...new Set(agentIds)]],
  );
  for (const row of rows) {
    found.set(row.agent_id, {
      knocksAnswered: row.knocks_answered,
      knockAnswerMedianSeconds: row.knock_answer_median_seconds,
      replies: row.replies,
      replyMedianSeconds: row.reply_median_seconds,
    });
  }
  return found;
}

/**
 * SQL for the times (`seconds`) an agent took to answer, one row each, from chat's records
 * (storage/chat.ts): chat builds on presence's port, so it is given, not imported. `agentId` and
 * `since` are placeholders of bound values.
 */
export interface AnswerTimesSql {
  /** Knocks on the agent it accepted or declined, settled since `since`. */
  knockAnswers: (agentId: string, since: string) => string;
  /** The agent's replies in workspaces, sent since `since`. */
  replies: (agentId: string, since: string) => string;
}

/**
 * Measures the agent again from the records since `since` and keeps the figures (as of `now`).
 * Each median is PostgreSQL's `percentile_cont(0.5)`: the middle time, or the mean of the two
 * middle ones for an even count; null when there is nothing to measure.
 */
export async function measureResponsiveness(
  db: Queryable,
  answerTimes: AnswerTimesSql,
  agentId: string,
  since: Date,
  now: Date,
): Promise<ResponsivenessRow> {
  const median = 'percentile_cont(0.5) within group (order by t.seconds)';
  const [row] = await db.query<{
    knocks_answered: number;
    knock_answer_median_seconds: number | null;
    replies: number;
    reply_median_seconds: number | null;
  }>(
    `with answered as (
       select count(*)::int as n, ${median} as median
       from (${answerTimes.knockAnswers('$1', '$2')}) t
     ), replied as (
       select count(*)::int as n, ${median} as median from (${answerTimes.replies('$1', '$2')}) t
     )
     insert into agent_responsiveness (agent_id, knocks_answered, knock_answer_median_seconds,
       replies, reply_median_seconds, computed_at)
     select $1, answered.n, answered.median, replied.n, replied.median, $3
     from answered cross join replied
     on conflict (agent_id) do update set knocks_answered = excluded.knocks_answered,
       knock_answer_median_seconds = excluded.knock_answer_median_seconds,
       replies = excluded.replies, reply_median_seconds = excluded.reply_median_seconds,
       computed_at = excluded.computed_at
     returning knocks_answered, knock_answer_median_seconds, replies, reply_median_seconds`,
    [agentId, since, now],
  );
  return row
    ? {
        knocksAnswered: row.knocks_answered,
        knockAnswerMedianSeconds: row.knock_answer_median_seconds,
        replies: row.replies,
        replyMedianSeconds: row.reply_median_seconds,
      }
    : NOTHING_MEASURED;
}

/**
 * Agents whose kept figures measured something and were computed before `before`: as the window
 * slides, old answers leave it. Oldest first, at most `limit`.
 */
export async function responsivenessDue(
  db: Queryable,
  before: Date,
  limit: number,
): Promise<string[]> {
  const rows = await db.query<{ agent_id: string }>(
    `select agent_id from agent_responsiveness
     where (knocks_answered > 0 or replies > 0) and computed_at < $1
     order by computed_at limit $2`,
    [before, limit],
  );
  return rows.map((row) => row.agent_id);
}

/** SQL: every agent's kept knock answer median (`agent_id`, `figure`), for a join. */
export function knockAnswerMediansSql(): string {
  return 'select r.agent_id, r.knock_answer_median_seconds as figure from agent_responsiveness r';
}
