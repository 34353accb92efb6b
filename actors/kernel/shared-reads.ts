/**
 * Reads from the database behind a cache of credentials (tokens, signing keys), shared by the
 * callers that ask at once for the same key: a crowd of one token's sockets connecting, a burst
 * of its requests after a restart, cost one read (and one note of use), not one each. Each
 * caller reading for itself also replaced the cached entry, so every holder of the one before
 * read again: 5,000 sockets of one token made 5,105 reads and as many writes.
 *
 * A read that began before the cache was told its entries may be stale (`invalidate`: a token
 * revoked, a key removed, here or in another process) is shared no longer, and `kept` says its
 * result must not be cached: it may show the credential as it was.
 */
export class SharedReads<T> {
  private readonly flights = new Map<string, { generation: number; result: Promise<T> }>();
  private generation = 0;

  /** Entries read so far may be stale: reads in flight are shared no longer, nor kept. */
  invalidate(): void {
    this.generation++;
  }

  /**
   * The read of `key` in flight, begun since the last `invalidate`, or `read` begun now. `read`
   * receives the generation it began in, for `kept`.
   */
  share(key: string, read: (generation: number) => Promise<T>): Promise<T> {
    const flight = this.flights.get(key);
    if (flight?.generation === this.generation) return flight.result;
    const own = { generation: this.generation, result: read(this.generation) };
    this.flights.set(key, own);
    const done = () => {
      if (this.flights.get(key) === own) this.flights.delete(key);
    };
    own.result.then(done, done);
    return own.result;
  }

  /** The generation now: what a read not shared (`share` not used) passes to `kept`. */
  get now(): number {
    return this.generation;
  }

  /** Whether a read begun in `generation` may be cached: nothing was invalidated since. */
  kept(generation: number): boolean {
    return generation === this.generation;
  }
}
