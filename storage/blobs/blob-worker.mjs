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
import { write } from 'node:fs';
import { parentPort } from 'node:worker_threads';

/** @typedef {import('./blob-messages.ts').BlobThreadRequest} BlobThreadRequest */
/** @typedef {import('./blob-messages.ts').BlobThreadReply} BlobThreadReply */
/**
 * @typedef {object} Job
 * @property {import('node:crypto').Hash} hash
 * @property {Uint8Array} ring
 * @property {number | null} fd
 * @property {number} position where the next bytes go in the file
 * @property {BlobThreadReply | null} failed
 * @property {Promise<unknown>} replied the job's last reply, sent once its write is done
 */

if (!parentPort) throw new Error('blob-worker must run as a worker thread');
const port = parentPort;
/** @type {Map<number, Job>} */
const jobs = new Map();

/**
 * Writes all of `bytes` at `position` of the file, in libuv's thread pool: a write to a
 * regular file may be short (a full disk can take part of it), so it goes on until all of it
 * is written or a write fails. At a position of its own, so writes of one job in flight at
 * once cannot land out of order.
 * @param {number} fd
 * @param {Uint8Array} bytes
 * @param {number} position
 * @returns {Promise<void>}
 */
function writeAll(fd, bytes, position) {
  return new Promise((resolve, reject) => {
    /** @param {number} done */
    const from = (done) => {
      if (done >= bytes.length) return resolve();
      write(fd, bytes, done, bytes.length - done, position + done, (error, written) =>
        error ? reject(error) : from(done + written),
      );
    };
    from(0);
  });
}

/**
 * @param {number} id
 * @param {unknown} caught
 * @returns {BlobThreadReply}
 */
function failure(id, caught) {
  const error = /** @type {{ message?: unknown; code?: unknown }} */ (caught);
  const code = typeof error.code === 'string' ? error.code : undefined;
  return { job: id, error: { message: String(error.message), code } };
}

/**
 * Answers `request` once the job's earlier replies have gone: a job's replies keep the order
 * of its requests.
 * @param {Job} job
 * @param {() => BlobThreadReply | Promise<BlobThreadReply>} reply
 */
function after(job, reply) {
  job.replied = job.replied.then(reply).then((answer) => port.postMessage(answer));
}

/** @param {BlobThreadRequest} request */
function handle(request) {
  if ('ring' in request) {
    const { job, ring, fd, algorithm } = request;
    jobs.set(job, {
      hash: createHash(algorithm),
      ring: new Uint8Array(ring),
      fd,
      position: 0,
      failed: null,
      replied: Promise.resolve(),
    });
    return;
  }
  const { job: id } = request;
  const job = jobs.get(id);
  if (!job) {
    port.postMessage(
      'drop' in request
        ? { job: id }
        : { job: id, error: { message: 'no such job', code: undefined } },
    );
    return;
  }
  if ('drop' in request) {
    // Answered after the writes in flight: then nothing writes to the file any more.
    jobs.delete(id);
    after(job, () => ({ job: id }));
    return;
  }
  if ('digest' in request) {
    jobs.delete(id);
    after(job, () => job.failed ?? { job: id, digest: job.hash.digest('hex') });
    return;
  }
  if (job.failed) {
    after(job, () => job.failed ?? { job: id });
    return;
  }
  const bytes = job.ring.subarray(request.offset, request.offset + request.length);
  // The write goes to the thread pool while this thread hashes the same bytes; the answer,
  // which frees the bytes' place in the ring, waits for both.
  let written = Promise.resolve();
  if (job.fd !== null) {
    written = writeAll(job.fd, bytes, job.position);
    job.position += bytes.length;
    written.catch(() => undefined);
  }
  job.hash.update(bytes);
  after(job, () =>
    written.then(
      () => job.failed ?? { job: id },
      (caught) => (job.failed ??= failure(id, caught)),
    ),
  );
}

port.on('message', (/** @type {BlobThreadRequest} */ request) => handle(request));
