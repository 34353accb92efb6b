/** How often the database is asked in the background, whether or not anyone calls /health. */
const PROBE_EVERY_MS = 1000;
/** How long /health waits for a fresh answer before it answers from the last one. */
const FRESH_ANSWER_WAIT_MS = 50;
/** A database whose last answer is older than this is not answering (a probe is stuck). */
const STALE_AFTER_MS = 5000;

/**
 * What /health says about the database: whether it answered recently. A probe (`ping`, a
 * trivial query that fails by itself past its own deadline) runs every second, and each /health
 * starts one too, but /health never waits for it more than FRESH_ANSWER_WAIT_MS: on PGlite a
 * probe waits its turn behind any running statement (an agent's query holds the one connection
 * up to its time limit), and /health must answer within 100 ms whatever runs. So /health reads
 * the newest outcome: a failed probe is unreachable at once (a database that went away answers
 * that quickly), and so is a database that has not answered for STALE_AFTER_MS.
 *
 * Probes never overlap: a slow one is shared by everyone who asks meanwhile.
 */
export class HealthProbe {
  /** When the database last answered (performance.now()); opening it was an answer. */
  private answeredAt = performance.now();
  private lastFailed = false;
  private running: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ping: () => Promise<boolean>) {}

  start(): void {
    this.timer ??= setInterval(() => void this.probe(), PROBE_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Whether the database answered recently; resolves within FRESH_ANSWER_WAIT_MS. */
  async reachable(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, FRESH_ANSWER_WAIT_MS);
    });
    await Promise.race([this.probe(), waited]);
    clearTimeout(timer);
    return !this.lastFailed && performance.now() - this.answeredAt <= STALE_AFTER_MS;
  }

  private probe(): Promise<void> {
    this.running ??= this.ping()
      .then(
        (answered) => {
          this.lastFailed = !answered;
          if (answered) this.answeredAt = performance.now();
        },
        () => {
          this.lastFailed = true;
        },
      )
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }
}
