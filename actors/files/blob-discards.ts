/**
 * Deletions of let-go bytes under way in this process, after the answer that let them go
 * (actors/files/versions.ts `discardLetGo`). The answer does not wait for them: deleting a
 * large file takes the disk tens of milliseconds, an S3 store a round trip. `settled` waits for
 * those under way now (shutdown, before storage closes; a test that looks at the disk).
 */
export class BlobDiscards {
  private readonly underWay = new Set<Promise<void>>();

  /** Runs `discard` in the background; a failure leaves the bytes to the collector. */
  start(discard: () => Promise<void>): void {
    const running = discard().catch(() => undefined);
    this.underWay.add(running);
    void running.then(() => this.underWay.delete(running));
  }

  /** Resolves once every deletion started before this call has ended. */
  async settled(): Promise<void> {
    await Promise.all([...this.underWay]);
  }
}
