/**
 * Where a workspace's receipt chain is kept: each capability that issues receipts keeps them
 * with what they record (file versions, agreements, deliveries, ratings, payments) and adds
 * here, at its start-up, the select that reads them (its own storage's SQL). list_receipts reads
 * the union (storage/receipts/receipts.ts), so the receipts capability names no table of theirs.
 */
export class ReceiptSources {
  private readonly selects = new Map<string, string>();

  /**
   * `select` reads the receipts of the workspace `$1`, with the columns `receipt` (jsonb), `at`
   * (timestamptz), `receipt_id` (uuid), `path` (the file it is on) and `paths` (every file it
   * names: a delivery's pinned files too).
   */
  add(name: string, select: string): void {
    if (this.selects.has(name)) throw new Error(`Receipts of ${name} are read already.`);
    this.selects.set(name, select);
  }

  /** Every source's select, in the order they were added. */
  all(): string[] {
    return [...this.selects.values()];
  }
}
