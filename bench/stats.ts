/** Latency summaries. A few hundred samples fit in a sorted array, which gives exact ranks. */
export interface LatencySummary {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentile (no interpolation), so each figure is a latency that happened. */
export function summarize(samplesMs: readonly number[]): LatencySummary | null {
  if (samplesMs.length === 0) return null;
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const rank = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? 0;
  return { count: sorted.length, p50: rank(0.5), p99: rank(0.99), max: sorted.at(-1) ?? 0 };
}

export function ms(value: number | undefined): string {
  return value === undefined ? '-' : `${value.toFixed(2)} ms`;
}

export function perSecond(value: number | undefined): string {
  return value === undefined ? '-' : `${Math.round(value).toLocaleString('en-US')} req/s`;
}

/** A plain text table: first row is the header. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows)
    row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  const line = (row: readonly string[]) =>
    row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join(' | ');
  const rule = widths.map((w) => '-'.repeat(w)).join('-+-');
  const [head, ...body] = rows;
  return [head ? line(head) : '', rule, ...body.map(line)].join('\n');
}
