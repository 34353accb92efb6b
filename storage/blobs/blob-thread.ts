/**
 * The blob thread (blob-worker.mjs) as puts use it: one thread for the process, started by the
 * first put that needs it and kept for the next ones, since starting a thread costs more than
 * hashing a megabyte. It holds the process open only while a put is using it. A thread that
 * stops fails the puts in progress (the store is unavailable); the next put starts a new one.
 */
import { Worker } from 'node:worker_threads';
import type { BlobHashAlgorithm, BlobThreadReply, BlobThreadRequest } from './blob-messages.ts';
import { BlobStoreUnavailableError, fileSystemFailure } from './errors.ts';

/** One put's bytes, handed over in order through `ring`. */
export interface BlobJob {
  /**
   * Writes `length` bytes at `offset` of the ring to the file (if the job has one), then hashes
   * them; resolves once those bytes of the ring may be overwritten. Rejects with the store's
   * error for a failed write; the job then writes nothing more.
   */
  piece(offset: number, length: number): Promise<void>;
  /** The hex digest (of the job's algorithm) of every byte handed over; the job ends. */
  digest(): Promise<string>;
  /** Ends the job; resolves once the thread will touch neither the ring nor the file again. */
  drop(): Promise<void>;
}

interface Waiter {
  resolve(digest: string | undefined): void;
  reject(error: Error): void;
}

const stoppedError = () => new BlobStoreUnavailableError('blob thread stopped');

class BlobThread {
  private readonly worker = new Worker(new URL('./blob-worker.mjs', import.meta.url));
  /** The answers each job waits for, in the order its requests went. */
  private readonly jobs = new Map<number, Waiter[]>();
  private nextJob = 1;
  stopped = false;

  constructor(onStop: () => void) {
    this.worker.unref();
    this.worker.on('message', (reply: BlobThreadReply) => {
      const waiter = this.jobs.get(reply.job)?.shift();
      if (!waiter) return;
      if ('error' in reply) {
        const { message, code } = reply.error;
        waiter.reject(fileSystemFailure(Object.assign(new Error(message), { code })));
      } else waiter.resolve(reply.digest);
    });
    const stop = () => {
      if (this.stopped) return;
      this.stopped = true;
      onStop();
      for (const waiters of this.jobs.values()) {
        for (const waiter of waiters) waiter.reject(stoppedError());
      }
      this.jobs.clear();
    };
    this.worker.on('error', stop);
    this.worker.on('exit', stop);
  }

  start(ring: SharedArrayBuffer, fd: number | null, algorithm: BlobHashAlgorithm): BlobJob {
    const job = this.nextJob++;
    const waiters: Waiter[] = [];
    if (this.jobs.size === 0) this.worker.ref();
    this.jobs.set(job, waiters);
    this.send({ job, ring, fd, algorithm });
    const ask = (request: BlobThreadRequest) =>
      new Promise<string | undefined>((resolve, reject) => {
        if (this.stopped) return reject(stoppedError());
        waiters.push({ resolve, reject });
        this.send(request);
      });
    let ended = false;
    const end = () => {
      ended = true;
      if (this.jobs.delete(job) && this.jobs.size === 0) this.worker.unref();
    };
    return {
      piece: async (offset, length) => {
        await ask({ job, offset, length });
      },
      digest: () => ask({ job, digest: true }).finally(end) as Promise<string>,
      // A job that ended, or a thread that stopped, touches nothing any more.
      drop: async () => {
        if (ended) return;
        await ask({ job, drop: true }).then(end, () => undefined);
      },
    };
  }

  /** Terminates the thread unannounced, as a crash would; resolves once it is gone. */
  async crash(): Promise<void> {
    // An idle thread does not hold the process open; the one waiting for it to go must.
    this.worker.ref();
    await this.worker.terminate();
  }

  private send(request: BlobThreadRequest): void {
    if (!this.stopped) this.worker.postMessage(request);
  }
}

/**
 * One thread per algorithm: the SHA-256 thread also writes the file, and MD5 (Content-MD5),
 * slower than SHA-256 where the CPU has SHA instructions, runs beside it in a thread of its
 * own, so that neither hash holds the main thread or the other.
 */
const threads = new Map<BlobHashAlgorithm, BlobThread>();

/**
 * Starts a job on the algorithm's blob thread: the bytes the put hands over through `ring`
 * are written to `fd` (none: the put writes them itself, or another job does) and hashed.
 */
export function startBlobJob(
  ring: SharedArrayBuffer,
  fd: number | null,
  algorithm: BlobHashAlgorithm = 'sha256',
): BlobJob {
  let thread = threads.get(algorithm);
  if (!thread || thread.stopped) {
    const started: BlobThread = new BlobThread(() => {
      if (threads.get(algorithm) === started) threads.delete(algorithm);
    });
    threads.set(algorithm, started);
    thread = started;
  }
  return thread.start(ring, fd, algorithm);
}

/** Test-only: the blob threads die as in a crash (those running); resolves once they are gone. */
export async function crashBlobThread(): Promise<void> {
  await Promise.all([...threads.values()].map((thread) => thread.crash()));
}
