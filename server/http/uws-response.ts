import type uWS from '@trufflesuite/uws-js-unofficial';

type Chunk = uWS.RecognizedString;

/** Who hears that the client went away: an object with a method, not a closure per request. */
export interface AbortListener {
  aborted(): void;
}

/**
 * A uWS response that may be touched at any time. uWS throws on any call to a response after
 * its onAborted callback ran or after it was ended, and a throw inside a uWS callback (onData,
 * onWritable) ends the process: so one client that makes the service answer early and then
 * goes on sending (a refused upload on a kept-alive connection) could crash it.
 *
 * Every use of a response in uws-engine.ts goes through this class. It marks the response
 * settled when uWS aborts it and when we end it (`end`, `endWithoutBody`, a `tryEnd` that
 * finished, `close`); from then on every call is a no-op, body chunks still arriving are
 * dropped (nobody reads them: the answer is out), and `cork` runs its writes (all no-ops)
 * without uWS so that callers' bookkeeping goes on as if written.
 */
export class GuardedResponse {
  private done = false;
  private gone = false;

  /** `listener.aborted` runs once when the client goes away before the answer was all sent. */
  constructor(
    private readonly res: uWS.HttpResponse,
    listener: AbortListener,
  ) {
    res.onAborted(() => {
      this.done = true;
      this.gone = true;
      listener.aborted();
    });
  }

  /** Ended or aborted: nothing reaches uWS any more. */
  get settled(): boolean {
    return this.done;
  }

  /** The client went away (or the connection was closed) before the answer was all sent. */
  get aborted(): boolean {
    return this.gone;
  }

  /** Body chunks until the answer is settled; later ones are dropped unseen. */
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): void {
    this.res.onData((chunk, isLast) => {
      if (!this.done) handler(chunk, isLast);
    });
  }

  pause(): void {
    if (!this.done) this.res.pause();
  }

  resume(): void {
    if (!this.done) this.res.resume();
  }

  cork(write: () => void): void {
    if (this.done) write();
    else this.res.cork(write);
  }

  writeStatus(status: string): void {
    if (!this.done) this.res.writeStatus(status);
  }

  writeHeader(name: string, value: string): void {
    if (!this.done) this.res.writeHeader(name, value);
  }

  end(body: Chunk, closeConnection: boolean): void {
    if (this.done) return;
    this.done = true;
    this.res.end(body, closeConnection);
  }

  /**
   * Without arguments when none are given: uWS takes an `undefined` length as a number and
   * writes `Content-Length: 0`.
   */
  endWithoutBody(reportedLength?: number, closeConnection?: boolean): void {
    if (this.done) return;
    this.done = true;
    if (reportedLength === undefined) this.res.endWithoutBody();
    else this.res.endWithoutBody(reportedLength, closeConnection);
  }

  /** `[ok, finished]`; once settled, `[true, true]`: there is nothing left to write. */
  tryEnd(chunk: Chunk, totalSize: number): [boolean, boolean] {
    if (this.done) return [true, true];
    const result = this.res.tryEnd(chunk, totalSize);
    if (result[1]) this.done = true;
    return result;
  }

  /** The peer's address as text; only while not settled (uWS has let go of it after). */
  remoteAddressAsText(): ArrayBuffer {
    if (this.done) throw new Error('the response is settled: its address is gone');
    return this.res.getRemoteAddressAsText();
  }

  getWriteOffset(): number {
    return this.done ? 0 : this.res.getWriteOffset();
  }

  onWritable(handler: (offset: number) => boolean): void {
    if (this.done) return;
    this.res.onWritable((offset) => (this.done ? true : handler(offset)));
  }

  /** Cuts the connection at once; uWS runs the onAborted callback from inside this call. */
  close(): void {
    if (this.done) return;
    this.done = true;
    this.res.close();
  }
}
