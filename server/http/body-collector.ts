import { ServiceError } from '../../protocol/errors.ts';

/**
 * Collects a request body as it arrives, for either engine. The engine feeds chunks from the
 * start (uWS loses data not taken at once); the route asks for the body later with its own
 * limit, and a body past that limit is refused at once instead of being read whole.
 */
export class BodyCollector {
  private chunks: Buffer[] = [];
  private size = 0;
  private ended = false;
  private failed: Error | null = null;
  /** Until the route names its limit, bodies are held to this much. */
  private limit = 1024 * 1024;
  private waiter: { resolve: (body: Buffer) => void; reject: (error: Error) => void } | null = null;

  constructor(
    private readonly declaredLength: number | null,
    /** Called when the body is refused, so the engine can stop reading the socket. */
    private readonly onRefuse: () => void,
  ) {}

  push(chunk: Buffer, last: boolean): void {
    if (this.failed) return;
    this.size += chunk.length;
    if (this.size > this.limit) return this.refuse();
    this.chunks.push(chunk);
    if (last) this.end();
  }

  end(): void {
    this.ended = true;
    this.settle();
  }

  abort(error: Error): void {
    if (this.failed) return;
    this.failed = error;
    this.chunks = [];
    this.waiter?.reject(error);
    this.waiter = null;
  }

  read(limit: number): Promise<Buffer> {
    this.limit = limit;
    if (this.declaredLength !== null && this.declaredLength > limit) this.refuse();
    else if (this.size > limit) this.refuse();
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.settle();
    });
  }

  private refuse(): void {
    this.abort(
      new ServiceError(
        'payload_too_large',
        `The body is larger than this route takes (${this.limit} bytes at most).`,
        { limit_bytes: this.limit },
      ),
    );
    this.onRefuse();
  }

  private settle(): void {
    if (!this.ended || !this.waiter) return;
    this.waiter.resolve(Buffer.concat(this.chunks));
    this.waiter = null;
  }
}
