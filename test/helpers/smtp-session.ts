import { connect, type Socket } from 'node:net';

/** One SMTP reply: its code and its text lines (joined). */
export interface SmtpReply {
  code: number;
  text: string;
}

/**
 * An SMTP conversation written by hand on a TCP socket, for what no well-behaved client sends:
 * raw command lines (a CRLF inside an address), recipients past the limit, a DATA stream of any
 * size written with backpressure. Each `command` resolves with the server's next reply.
 */
export class SmtpSession {
  private buffer = '';
  private readonly replies: SmtpReply[] = [];
  private readonly waiting: ((reply: SmtpReply) => void)[] = [];
  private closedError: Error | null = null;

  private constructor(readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (text: string) => this.take(text));
    socket.on('error', (error) => (this.closedError = error));
    socket.on('close', () => {
      this.closedError ??= new Error('the server closed the connection');
      for (const wake of this.waiting.splice(0)) wake({ code: 0, text: 'closed' });
    });
  }

  /** Connects and reads the greeting. */
  static async open(port: number): Promise<{ session: SmtpSession; greeting: SmtpReply }> {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const session = new SmtpSession(socket);
    return { session, greeting: await session.reply() };
  }

  private take(text: string): void {
    this.buffer += text;
    for (;;) {
      // A reply ends with a line "NNN text" (a space, not a dash, after the code).
      const match = /^(?:\d{3}-[^\r\n]*\r\n)*(\d{3})(?: [^\r\n]*)?\r\n/.exec(this.buffer);
      if (!match) return;
      const reply = { code: Number(match[1]), text: match[0].trim() };
      this.buffer = this.buffer.slice(match[0].length);
      const wake = this.waiting.shift();
      if (wake) wake(reply);
      else this.replies.push(reply);
    }
  }

  /** The next reply (already read, or still to come; code 0 once the connection is gone). */
  reply(): Promise<SmtpReply> {
    const ready = this.replies.shift();
    if (ready) return Promise.resolve(ready);
    if (this.closedError && this.socket.destroyed)
      return Promise.resolve({ code: 0, text: 'closed' });
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Writes `line` as it is (CRLF added) and reads the reply. */
  async command(line: string): Promise<SmtpReply> {
    this.socket.write(`${line}\r\n`, 'latin1');
    return this.reply();
  }

  /** Writes bytes as they are, waiting for the socket to drain (no reply is read). */
  async write(bytes: Buffer | string): Promise<void> {
    if (this.socket.write(bytes)) return;
    await new Promise<void>((resolve, reject) => {
      const onDrain = () => {
        this.socket.off('close', onClose);
        resolve();
      };
      const onClose = () => {
        this.socket.off('drain', onDrain);
        reject(this.closedError ?? new Error('closed'));
      };
      this.socket.once('drain', onDrain);
      this.socket.once('close', onClose);
    });
  }

  close(): void {
    this.socket.destroy();
  }
}
