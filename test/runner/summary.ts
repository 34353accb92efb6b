/**
 * The end of a run, whichever way it ran: the slowest files, the suites that did not run for
 * want of PostgreSQL or a real client (never silently), and the line CI reads last:
 * `N passed, N failed[, skipped ...]`. Answers the exit code.
 */
export interface RunTotals {
  total: number;
  passed: number;
  /** Tests uvu skipped. */
  skipped: number;
  /** Failures uvu did not count: a file that hung or whose process died. */
  extraFailed: number;
  /** Seconds each file took. */
  seconds: Map<string, number>;
  /** Suites skipped for want of DATABASE_URL, and for want of a real client. */
  postgresSkipped: string[];
  clientsSkipped: string[];
  /** Files run once more because their worker crashed (./parent.ts), with the signal. */
  ranAgainAfterCrash: string[];
}

export function printSummary(totals: RunTotals): number {
  const slowest = [...totals.seconds].sort((a, b) => b[1] - a[1]).slice(0, 12);
  if (totals.seconds.size > 1) {
    console.log(
      `slowest files: ${slowest.map(([file, seconds]) => `${file} ${seconds.toFixed(1)} s`).join(', ')}`,
    );
  }
  let failed = totals.total - totals.passed - totals.skipped + totals.extraFailed;
  if (totals.ranAgainAfterCrash.length > 0) {
    console.log(
      `ran once more after their worker crashed: ${totals.ranAgainAfterCrash.join(', ')}`,
    );
  }

  // Suites that need PostgreSQL never skip silently; under REQUIRE_POSTGRES=1 a skip fails.
  const notRun = totals.postgresSkipped;
  const requirePostgres = process.env.REQUIRE_POSTGRES === '1';
  if (notRun.length > 0) {
    console.log(
      `${notRun.length} PostgreSQL suite${notRun.length === 1 ? '' : 's'} skipped: DATABASE_URL is not set` +
        (requirePostgres ? ' and REQUIRE_POSTGRES=1, so each counts as failed' : '') +
        ` (${notRun.join('; ')})`,
    );
    if (requirePostgres) failed += notRun.length;
  }
  // Suites that drive a real third-party client (rclone, the Python SDKs) never skip silently
  // either; `.ci/run` installs the clients and sets REQUIRE_CLIENTS=1.
  const missing = totals.clientsSkipped;
  const requireClients = process.env.REQUIRE_CLIENTS === '1';
  if (missing.length > 0) {
    console.log(
      `${missing.length} real-client suite${missing.length === 1 ? '' : 's'} skipped` +
        (requireClients ? ' and REQUIRE_CLIENTS=1, so each counts as failed' : '') +
        ` (${missing.join('; ')})`,
    );
    if (requireClients) failed += missing.length;
  }
  // uvu's "Skipped:" counts skipped tests only; whole suites skipped for want of PostgreSQL or a
  // client count here too, unless they were required (then they failed).
  const suitesSkipped =
    (requirePostgres ? 0 : notRun.length) + (requireClients ? 0 : missing.length);
  const skips = [
    ...(totals.skipped ? [`${totals.skipped} test${totals.skipped === 1 ? '' : 's'}`] : []),
    ...(suitesSkipped ? [`${suitesSkipped} suite${suitesSkipped === 1 ? '' : 's'}`] : []),
  ];
  console.log(
    `${totals.passed} passed, ${failed} failed${skips.length ? `, skipped ${skips.join(' and ')}` : ''}`,
  );
  return failed > 0 || totals.total === 0 ? 1 : 0;
}
