import type { ByteBody } from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';

/** What an engine lets the body stream do to the socket underneath. */
export interface BodySource {
  /** Stop reading the socket: the reader is behind. */
  pause(): void;
  /** Read again. */
  resume(): void;
}

/**
 * Bytes held before the socket is paused. Small enough that a thousand slow uploads hold
 * little, large enough that a JSON body of a few KiB never pauses at all.
 */
export const HIGH_WATER_BYTES = 256 * 1024;
/** Held bytes under which a paused socket is read again. */
const LOW_WATER_BYTES = 64 * 1024;

/** Thrown into a reader when the client goes away mid-body. */
export class ClientGone extends Error {
  constructor() {
    super('The client went away before the body ended.');
    this.name = 'ClientGone';
  }
}

/**
 * A request body as it arrives, for either engine. The engine pushes chunks from the first
 * one on (uWS loses data not taken at once) and the route pulls them when it is ready, naming
 * its limit then: as a whole (`read`, for JSON) or as a stream (`stream`, for a `bytes`
 * operation's handler). At most about HIGH_WATER_BYTES wait here: past that the engine stops
 * reading the socket until the reader catches up, so a slow reader slows the client and no
 * body is ever held whole. A body that declares or reaches more than the limit is refused
 * (413) at once, and the reader's next pull throws that error; a client that goes away makes
 * it throw ClientGone.
 */
export class BodyStream {
  private queue: Uint8Array[] = [];
  private head = 0;
  private buffered = 0;
  private received = 0;
  private ended = false;
  private paused = false;
  private failure: Error | null = null;
  /** Unknown until the route names it. */
  private limit = Infinity;
  private claimed = false;
  private wake: (() => void) | null = null;

  constructor(
    private readonly declaredLength: number | null,
    private readonly source: BodySource,
    private readonly contentType: string | undefined,
  ) {}

  /** True once every byte of the body has arrived (and none is refused). */
  get complete(): boolean {
    return this.ended && this.failure === null;
  }

  /** The engine's side: a chunk arrived (the stream keeps it; copy uWS chunks first). */
  push(chunk: Uint8Array): void {
    if (this.failure) return;
    this.received += chunk.length;
    if (this.received > this.limit) return this.refuse();
    if (chunk.length === 0) return;
    this.queue.push(chunk);
    this.buffered += chunk.length;
    if (!this.paused && this.buffered >= HIGH_WATER_BYTES) {
      this.paused = true;
      this.source.pause();
    }
    this.notify();
  }

  /** The engine's side: the body ended. */
  end(): void {
    this.ended = true;
    this.notify();
  }

  /** The engine's side: the client went away, or the server stops. */
  abort(error: Error = new ClientGone()): void {
    if (this.failure) return;
    this.failure = error;
    this.queue = [];
    this.head = 0;
    this.buffered = 0;
    this.notify();
  }

  /** The whole body, at most `limit` bytes. */
  async read(limit: number): Promise<Buffer> {
    const chunks: Uint8Array[] = [];
    for await (const chunk of this.stream(limit)) chunks.push(chunk);
    return chunks.length === 1 ? Buffer.from(chunks[0] as Uint8Array) : Buffer.concat(chunks);
  }

  /**
   * The body as a ByteBody, at most `limit` bytes. Throws the 413 at once when the declared
   * length (or what already arrived) is over the limit, so the route answers before reading.
   */
  stream(limit: number): ByteBody {
    if (this.claimed) throw new Error('A request body can be read only once.');
    this.claimed = true;
    this.limit = limit;
    if ((this.declaredLength !== null && this.declaredLength > limit) || this.received > limit) {
      this.refuse();
    }
    if (this.failure) throw this.failure;
    return {
      declaredLength: this.declaredLength,
      contentType: this.contentType,
      [Symbol.asyncIterator]: () => this.chunks(),
    };
  }

  private async *chunks(): AsyncGenerator<Uint8Array, void, undefined> {
    for (;;) {
      if (this.failure) throw this.failure;
      if (this.head < this.queue.length) {
        const chunk = this.queue[this.head] as Uint8Array;
        this.queue[this.head++] = EMPTY;
        if (this.head === this.queue.length) {
          this.queue = [];
          this.head = 0;
        }
        this.buffered -= chunk.length;
        if (this.paused && this.buffered <= LOW_WATER_BYTES) {
          this.paused = false;
          this.source.resume();
        }
        yield chunk;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  private refuse(): void {
    // Nothing more of this body will be read: the answer closes the connection.
    if (!this.paused) {
      this.paused = true;
      this.source.pause();
    }
    this.abort(
      new ServiceError(
        'payload_too_large',
        `The body is larger than this route takes (${this.limit} bytes at most).`,
        { limit_bytes: this.limit },
      ),
    );
  }
}

const EMPTY = new Uint8Array(0);
