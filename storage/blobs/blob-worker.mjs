// @ts-check
/**
 * The blob thread: it writes a put's bytes to the temporary file and hashes them (SHA-256), so
 * that the main thread, which has the sockets to serve, only hands them over. One thread serves
 * every put of the process, each put a job of its own. The bytes come through shared memory
 * (the put's ring, hashed-writer.ts); messages say only where they are (blob-messages.ts).
 * Every request but the first of a job is answered, in order.
 *
 * Plain JavaScript, type-checked from its JSDoc, so that the thread needs no TypeScript loader
 * (on Node 20 registering tsx in a thread costs ~50 MB of RSS for good; see
 * storage/pglite/worker.mjs). Keep it free of imports of our .ts files (types excepted).
 */
import { createHash } from 'node:crypto';
import { writeSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';

/** @typedef {import('./blob-messages.ts').BlobThreadRequest} BlobThreadRequest */
/** @typedef {import('./blob-messages.ts').BlobThreadReply} BlobThreadReply */
/**
 * @typedef {object} Job
 * @property {import('node:crypto').Hash} hash
 * @property {Uint8Array} ring
 * @property {number | null} fd
 * @property {BlobThreadReply | null} failed
 */

if (!parentPort) throw new Error('blob-worker must run as a worker thread');
const port = parentPort;
/** @type {Map<number, Job>} */
const jobs = new Map();

/**
 * @param {BlobThreadRequest} request
 * @returns {BlobThreadReply | null}
 */
function handle(request) {
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
      const error = /** @type {{ message?: unknown; code?: unknown }} */ (caught);
      const code = typeof error.code === 'string' ? error.code : undefined;
      job.failed = { job: id, error: { message: String(error.message), code } };
      return job.failed;
    }
  }
  job.hash.update(bytes);
  return { job: id };
}

port.on('message', (/** @type {BlobThreadRequest} */ request) => {
  const reply = handle(request);
  if (reply) port.postMessage(reply);
});
