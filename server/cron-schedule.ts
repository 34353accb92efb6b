import { createTask, validateDetailed, type ScheduledTask } from 'node-cron';

/** The time zone every job's schedule is read in, for node-cron's matcher and its tasks alike. */
export const CRON_TIMEZONE = 'UTC';

const SECOND_MS = 1000;
const DAY_MS = 86_400_000;
// As far ahead as node-cron itself looks for a match.
const SEARCH_DAYS = 366 * 100;

/**
 * A cron schedule, in UTC. node-cron decides what matches: its parse expands the time fields,
 * and the match of a task (created, never started: it only judges times) judges days, with its
 * L, W and # forms. node-cron offers no "next match after this time" (its getNextRuns counts
 * from the wall clock), so the walk from one time to the next is here: day by day to the first
 * that matches, then through its times in order.
 */
export class CronSchedule {
  private readonly task: ScheduledTask;
  private readonly seconds: number[];
  private readonly minutes: number[];
  private readonly hours: number[];
  /** The earliest time of day the time fields allow, in ms from midnight. */
  private readonly firstTimeOfDay: number;

  /** `expression` must be one node-cron accepts (validateDetailed). */
  constructor(jobName: string, expression: string) {
    const checked = validateDetailed(expression);
    if (!checked.valid || !checked.fields) throw new Error(`Invalid cron expression ${expression}`);
    const ascending = (values: number[]) => [...new Set(values)].sort((a, b) => a - b);
    this.seconds = ascending(checked.fields.second);
    this.minutes = ascending(checked.fields.minute);
    this.hours = ascending(checked.fields.hour);
    this.firstTimeOfDay = timeOfDay(
      Math.min(...this.hours),
      Math.min(...this.minutes),
      Math.min(...this.seconds),
    );
    this.task = createTask(expression, () => undefined, { name: jobName, timezone: CRON_TIMEZONE });
  }

  /** The first fire strictly after `now` (ms since the epoch). */
  nextAfter(now: number): number {
    const firstDay = Math.floor(now / DAY_MS) * DAY_MS;
    for (let day = firstDay; day < firstDay + SEARCH_DAYS * DAY_MS; day += DAY_MS) {
      // The day's first candidate matches every time field, so the match judges the day alone.
      if (!this.task.match(new Date(day + this.firstTimeOfDay))) continue;
      const fire = this.firstTimeAfter(day, now);
      if (fire !== undefined) return fire;
    }
    throw new Error(
      `The schedule of job ${this.task.name}, "${this.task.getPattern()}", names no time within 100 years.`,
    );
  }

  /** Whether the schedule fires at `time` (ms since the epoch). */
  fires(time: number): boolean {
    return this.nextAfter(time - 1) === time;
  }

  /** Takes the task out of node-cron's list of tasks. */
  dispose(): void {
    void this.task.destroy();
  }

  /** The day's first time that matches the time fields and comes after `now`. */
  private firstTimeAfter(day: number, now: number): number | undefined {
    for (const hour of this.hours) {
      if (day + timeOfDay(hour + 1, 0, 0) <= now) continue;
      for (const minute of this.minutes) {
        for (const second of this.seconds) {
          const time = day + timeOfDay(hour, minute, second);
          if (time > now) return time;
        }
      }
    }
    return undefined;
  }
}

/** Milliseconds from midnight. */
function timeOfDay(hour: number, minute: number, second: number): number {
  return ((hour * 60 + minute) * 60 + second) * SECOND_MS;
}
