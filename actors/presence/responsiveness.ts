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

/** One agent's measures: the one under way, or the gap after it, and whether one more is asked. */
interface Measuring {
  /** Told again since the last measure began: one more at the end of the gap. */
  again: boolean;
  /** The measure under way (null in the gap after it). */
  running: Promise<void> | null;
  /** The end of the gap after the last measure (null while measuring). */
  gap: NodeJS.Timeout | null;
}

/**
 * Keeps each agent's responsiveness measured as it answers: told after the commit of a knock
 * answered or a message sent, it measures that agent again, off the request's path. The first
 * word is measured at once; what is told while a measure runs, or within MEASURE_GAP_MS after
 * it, is measured once at the end of that gap. So messages sent one after another (each after
 * the last one's measure ended) cost a measure every two seconds, not one each.
 */
export class ResponsivenessKeeper {
  private readonly agents = new Map<string, Measuring>();
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
    const known = this.agents.get(agentId);
    if (known) {
      known.again = true;
      return;
    }
    const state: Measuring = { again: false, running: null, gap: null };
    this.agents.set(agentId, state);
    this.measure(agentId, state);
  }

  private measure(agentId: string, state: Measuring): void {
    state.again = false;
    state.gap = null;
    state.running = this.outside.runInAsyncScope(async () => {
      try {
        await measure(this.services, agentId);
      } catch (error) {
        // The hourly pass measures it again; the figures are late, never wrong for long.
        this.log(`presence: could not measure agent ${agentId} (${String(error)})`);
      }
      state.running = null;
      state.gap = setTimeout(() => this.gapEnded(agentId, state), MEASURE_GAP_MS).unref();
    });
  }

  private gapEnded(agentId: string, state: Measuring): void {
    if (state.again) this.measure(agentId, state);
    else this.agents.delete(agentId);
  }

  /**
   * Measures at once what waits for the end of a gap, and waits for every measure under way
   * (shutdown; tests).
   */
  async settled(): Promise<void> {
    for (;;) {
      const running: Promise<void>[] = [];
      for (const [agentId, state] of this.agents) {
        if (state.gap && state.again) {
          clearTimeout(state.gap);
          this.measure(agentId, state);
        }
        if (state.running) running.push(state.running);
      }
      if (running.length === 0) return;
      await Promise.all(running);
    }
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
