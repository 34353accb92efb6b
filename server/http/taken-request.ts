import { bytesBody, type ByteBody } from '../../protocol/binding.ts';
import type { LazyAbort } from './abort.ts';
import type { BodyStream } from './body-stream.ts';
import type { EngineRequest } from './engine.ts';

const EMPTY = Buffer.alloc(0);

/** Where a request's peer address is read, when reading it costs (uws-engine.ts). */
export interface Peer {
  readonly remoteAddress: string;
}

/**
 * A request as either engine hands it on: what it copied from the wire, its body (null when
 * it declared none) and its abort. A class rather than an object of closures: one allocation
 * per request on the hot path, its methods shared.
 */
export class TakenRequest implements EngineRequest {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly query: string,
    readonly headers: Record<string, string>,
    /** The address itself, or where to read it when first asked (uWS: see UwsExchange). */
    private readonly peer: string | Peer,
    private readonly bodyStream: BodyStream | null,
    private readonly abort: LazyAbort,
  ) {}

  get remoteAddress(): string {
    return typeof this.peer === 'string' ? this.peer : this.peer.remoteAddress;
  }

  body(limit: number): Promise<Buffer> {
    return this.bodyStream ? this.bodyStream.read(limit) : Promise.resolve(EMPTY);
  }

  stream(limit: number): ByteBody {
    return this.bodyStream
      ? this.bodyStream.stream(limit)
      : bytesBody(EMPTY, this.headers['content-type']);
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }
}
