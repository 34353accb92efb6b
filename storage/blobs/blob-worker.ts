/**
 * The blob thread: it writes a put's bytes to the temporary file and hashes them (SHA-256), so
 * that the main thread, which has the sockets to serve, only hands them over. One thread serves
 * every put of the process, each put a job of its own. The bytes come through shared memory
 * (the put's ring, hashed-writer.ts); messages say only where they are. Every request but the
 * first of a job is answered, in order.
 */
import { createHash, type Hash } from 'node:crypto';
import { writeSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';

export type BlobThreadRequest =
  /** A new job: its ring and, when the thread is to write the bytes, the file's descriptor. */
  | { job: number; ring: SharedArrayBuffer; fd: number | null }
  /** The next bytes: written, then hashed; answered once the ring's bytes may be reused. */
  | { job: number; offset: number; length: number }
  | { job: number; digest: true }
  /** Answered once the thread is done with the job's ring and descriptor for good. */
  | { job: number; drop: true };

export type BlobThreadReply =
  | { job: number; digest?: string }
  /** A write failed; the job writes nothing more and answers this to what follows. */
  | { job: number; error: { message: string; code: string | undefined } };

interface Job {
  hash: Hash;
  ring: Uint8Array;
  fd: number | null;
  failed: BlobThreadReply | null;
}

if (!parentPort) throw new Error('blob-worker must run as a worker thread');
const port = parentPort;
const jobs = new Map<number, Job>();

function handle(request: BlobThreadRequest): BlobThreadReply | null {
  if ('ring' in request) {
    const { job, ring, fd } = request;
    jobs.set(job, { hash: createHash('sha256'), ring: new Uint8Array(ring), fd, failed: null });
    return null;
  }
  const { job: id } = request;
  const job = jobs.get(id);
  if ('drop' in request) {
    jobs.delete(id);
    return { job: id };
  }
  if (!job) return { job: id, error: { message: 'no such job', code: undefined } };
  if ('digest' in request) {
    jobs.delete(id);
    return job.failed ?? { job: id, digest: job.hash.digest('hex') };
  }
  if (job.failed) return job.failed;
  const bytes = job.ring.subarray(request.offset, request.offset + request.length);
  if (job.fd !== null) {
    try {
      // A write to a regular file may be short (a full disk can take part of it): go on until
      // all of it is written or the write fails.
      for (let done = 0; done < bytes.length;) {
        done += writeSync(job.fd, bytes, done, bytes.length - done);
      }
    } catch (caught) {
      const error = caught as { message?: unknown; code?: unknown };
      const code = typeof error.code === 'string' ? error.code : undefined;
      job.failed = { job: id, error: { message: String(error.message), code } };
      return job.failed;
    }
  }
  job.hash.update(bytes);
  return { job: id };
}

port.on('message', (request: BlobThreadRequest) => {
  const reply = handle(request);
  if (reply) port.postMessage(reply);
});
