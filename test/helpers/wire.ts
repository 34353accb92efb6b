import { connect, type Socket } from 'node:net';

/** One answer as it came off the wire. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * One raw TCP connection to a server, for clients no HTTP library would be: writing part of a
 * body and leaving, sending a request's head and a large piece of its body in one write, or
 * sending the next request on a connection as soon as the answer before it is in. Resets and
 * closes are expected here: they never throw.
 */
export class Wire {
  readonly socket: Socket;
  private received = Buffer.alloc(0);
  private readonly waiters = new Set<() => void>();
  private isClosed = false;
  readonly closed: Promise<void>;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('error', () => undefined);
    this.socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      this.wakeAll();
    });
    this.closed = new Promise((resolve) =>
      this.socket.once('close', () => {
        this.isClosed = true;
        this.wakeAll();
        resolve();
      }),
    );
  }

  /** Resolves once the bytes are handed to the kernel, or the connection is gone. */
  write(bytes: Uint8Array): Promise<void> {
    if (this.isClosed || this.socket.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.socket.off('close', done);
        resolve();
      };
      this.socket.once('close', done);
      this.socket.write(bytes, done);
    });
  }

  /**
   * The next whole answer (with a Content-Length body), taken off what was received; null when
   * the connection closed first.
   */
  async answer(): Promise<RawAnswer | null> {
    for (;;) {
      const parsed = this.parse();
      if (parsed) return parsed;
      if (this.isClosed) return null;
      await new Promise<void>((resolve) => this.waiters.add(resolve));
    }
  }

  /** The status of the first answer's status line, as soon as it is in; 0 if none came. */
  async status(): Promise<number> {
    for (;;) {
      const match = /^HTTP\/1\.1 (\d{3})/.exec(this.received.toString('latin1', 0, 12));
      if (match) return Number(match[1]);
      if (this.isClosed) return 0;
      await new Promise<void>((resolve) => this.waiters.add(resolve));
    }
  }

  destroy(): void {
    this.socket.destroy();
  }

  private parse(): RawAnswer | null {
    const end = this.received.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const [statusLine = '', ...lines] = this.received.toString('latin1', 0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const framed =
      headers['transfer-encoding'] === 'chunked'
        ? dechunk(this.received.subarray(end + 4))
        : fixedLength(this.received.subarray(end + 4), Number(headers['content-length'] ?? 0));
    if (!framed) return null;
    this.received = this.received.subarray(end + 4 + framed.used);
    return { status: Number(statusLine.split(' ')[1]), headers, body: framed.body };
  }

  private wakeAll(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }
}

/** A body of `length` bytes, once all are in. */
function fixedLength(bytes: Buffer, length: number): { body: Buffer; used: number } | null {
  return bytes.length < length
    ? null
    : { body: Buffer.from(bytes.subarray(0, length)), used: length };
}

/** A chunked body (without trailers), once its last chunk is in. */
function dechunk(bytes: Buffer): { body: Buffer; used: number } | null {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    if (lineEnd < 0) return null;
    const size = parseInt(bytes.toString('latin1', at, lineEnd), 16);
    const start = lineEnd + 2;
    if (bytes.length < start + size + 2) return null;
    if (size === 0) return { body: Buffer.concat(parts), used: start + 2 };
    parts.push(bytes.subarray(start, start + size));
    at = start + size + 2;
  }
}

/** A request's head, as bytes: the request line, the headers, the blank line. */
export function requestHead(
  method: string,
  path: string,
  headers: Record<string, string | number>,
): Buffer {
  const lines = [`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}
