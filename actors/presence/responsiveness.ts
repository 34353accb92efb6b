import { AsyncResource } from 'node:async_hooks';
import { RESPONSIVENESS_WINDOW_DAYS } from '../../protocol/presence.ts';
import { measureResponsiveness, responsivenessDue } from '../../storage/presence/responsiveness.ts';
import { countsNotice } from '../kernel/agent-counts.ts';
import type { Services } from '../kernel/services.ts';

const DAY_MS = 86_400_000;
/** The hourly pass measures again the agents last measured longer ago than this. */
const REMEASURE_AFTER_MS = 3_600_000;
/**
 * An agent is measured at most this often (real time) when told again and again: a burst of
 * messages costs a measure every two seconds, not one each.
 */
const MEASURE_GAP_MS = 2_000;
/** Agents one pass of the job measures at most; the next pass takes the rest. */
const PASS_LIMIT = 500;

/** The start of the window at `nowMs`. */
function windowStart(nowMs: number): Date {
  return new Date(nowMs - RESPONSIVENESS_WINDOW_DAYS * DAY_MS);
}

/** Measures the agent again and keeps the figures; its account's copy is forgotten everywhere. */
async function measure(services: Services, agentId: string): Promise<void> {
  const nowMs = services.clock.now();
  await services.commit(async (tx) => {
    await measureResponsiveness(
      tx,
      services.answerTimesSql,
      agentId,
      windowStart(nowMs),
      new Date(nowMs),
    );
    return { result: undefined, notices: [countsNotice(agentId)] };
  });
}

/**
 * Keeps each agent's responsiveness measured as it answers: told after the commit of a knock
 * answered or a message sent, it measures that agent again, off the request's path. One
 * measure per agent at a time; what is told meanwhile asks for one more, a moment after it.
 */
export class ResponsivenessKeeper {
  private readonly running = new Map<string, { again: boolean }>();
  /**
   * Where measures run: made at start-up, outside every request, so a measure told by a keyed
   * request is its own write, not a step of that request's unit of work (actors/kernel/commit.ts).
   */
  private readonly outside = new AsyncResource('presence.measure');

  constructor(
    private readonly services: Services,
    private readonly log: (message: string) => void,
  ) {}

  /** Something the agent's figures count was committed: measure it again soon. */
  changed(agentId: string): void {
    const running = this.running.get(agentId);
    if (running) {
      running.again = true;
      return;
    }
    const state = { again: false };
    this.running.set(agentId, state);
    void this.outside.runInAsyncScope(async () => {
      try {
        for (;;) {
          state.again = false;
          await measure(this.services, agentId);
          if (!state.again) break;
          await new Promise((resolve) => setTimeout(resolve, MEASURE_GAP_MS).unref());
        }
      } catch (error) {
        // The hourly pass measures it again; the figures are late, never wrong for long.
        this.log(`presence: could not measure agent ${agentId} (${String(error)})`);
      } finally {
        this.running.delete(agentId);
      }
    });
  }

  /** Waits for every measure under way (tests; shutdown). */
  async settled(): Promise<void> {
    while (this.running.size > 0) await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * The hourly pass: agents whose figures measured something are measured again as the window
 * slides, so answers older than the window leave the medians even when the agent is quiet.
 */
export async function remeasureDue(services: Services, now: Date): Promise<void> {
  const due = await responsivenessDue(
    services.db(),
    new Date(now.getTime() - REMEASURE_AFTER_MS),
    PASS_LIMIT,
  );
  for (const agentId of due) await measure(services, agentId);
}
