/**
 * One put's bytes on their way into its temporary file, hashed as they go (SHA-256, the blob's
 * key, and MD5, its Content-MD5), with as little as possible of it on the main thread, which
 * has the sockets to serve: the bytes are copied into the pieces of a small shared ring and
 * handed over to the blob threads (blob-thread.ts): one writes them to the file and hashes
 * SHA-256, the other hashes MD5 from the same ring at the same time, while the next ones
 * arrive. A file that gives no descriptor (a test's) is written here, through its own `write`,
 * and only hashed there. A blob that fits in one small piece is all done here: the threads
 * would cost more than they save.
 *
 * The bytes are copied, not handed over as they came, because the source may keep what it gave.
 */
import { createHash } from 'node:crypto';
import { BLOB_CHUNK_BYTES } from './blob-store.ts';
import { startBlobJob, type BlobJob } from './blob-thread.ts';
import type { BlobDigests } from './blob-store.ts';
import { fileSystemFailure } from './errors.ts';
import type { TempFile } from './temp-file.ts';

/** The most bytes handed over at once; larger chunks are split. */
const PIECE_BYTES = 512 * 1024;
/**
 * Pieces on their way at once: one is written while the next is filled. So a put runs at most
 * two pieces ahead of the disk, whatever the blob's size.
 */
const PIECES_IN_FLIGHT = 2;
/**
 * A durable file is also fsynced every so many bytes, in the background: the disk then takes
 * the bytes while the rest arrive, and the fsync at the end waits only for the last few.
 */
const SYNC_EVERY_BYTES = 8 * 1024 * 1024;

/**
 * Rings of puts that ended, for the next ones: a new ring costs more than copying a megabyte into
 * one (fresh pages are mapped and zeroed), and a small put would pay that every time.
 */
const spareRings: SharedArrayBuffer[] = [];
const SPARE_RINGS = 4;

export class HashedWriter {
  private readonly ring = spareRings.pop() ?? new SharedArrayBuffer(PIECE_BYTES * PIECES_IN_FLIGHT);
  private ringGivenBack = false;
  /** Started with the first piece that is not the last: SHA-256 (and the writes), and MD5. */
  private job: BlobJob | null = null;
  private md5Job: BlobJob | null = null;
  /** The first write, fsync or hashing that failed; the put stops at its next piece. */
  private failure: Error | null = null;
  private stopped = false;
  /** Each slot of the ring is free again once its promise settles (they never reject). */
  private readonly slotFree: Promise<unknown>[] = [];
  /** The writes made here, one after another in order (never rejects). */
  private written: Promise<void> = Promise.resolve();
  /**
   * The SHA-256 thread's answer for the last piece it writes: it answers a job's pieces in
   * order, each once written, so this settles once all its writes are done (never rejects).
   */
  private threadWritten: Promise<unknown> = Promise.resolve();
  private syncing: Promise<void> | null = null;
  private unsynced = 0;
  private pieces = 0;
  /** The piece being filled, in slot `slot`, and how much of it is. */
  private piece: Uint8Array | null = null;
  private slot = 0;
  private filled = 0;

  /** `sync`: the file is to be made durable (and is fsynced as it goes). */
  constructor(
    private readonly file: TempFile,
    private readonly sync: boolean,
  ) {}

  /** Takes a copy of `chunk`; resolves when the ring has room for the next one. */
  async add(chunk: Uint8Array): Promise<void> {
    for (let at = 0; at < chunk.length;) {
      const piece = this.piece ?? (await this.takeSlot());
      const length = Math.min(PIECE_BYTES - this.filled, chunk.length - at);
      piece.set(chunk.subarray(at, at + length), this.filled);
      this.filled += length;
      at += length;
      // Small chunks are gathered: a source of tiny chunks costs one write per BLOB_CHUNK_BYTES.
      if (this.filled >= BLOB_CHUNK_BYTES) this.handOver(piece.subarray(0, this.filled));
    }
  }

  /**
   * Writes the rest and makes the file durable if asked; answers the hex SHA-256 and the base64
   * MD5 of it all.
   */
  async finish(): Promise<BlobDigests> {
    const last = this.piece?.subarray(0, this.filled);
    let digest: Promise<BlobDigests>;
    if (this.job && this.md5Job) {
      if (last) this.handOver(last);
      // Asked at once: the threads answer after the last piece, while the file is synced.
      const md5 = this.md5Job.digest();
      digest = Promise.all([this.job.digest(), md5]).then(([sha256, md5Hex]) => ({
        sha256,
        md5: Buffer.from(md5Hex, 'hex').toString('base64'),
      }));
      void digest.catch(() => undefined); // awaited below, whatever happens
    } else {
      const bytes = last ?? new Uint8Array(0);
      digest = Promise.resolve({
        sha256: createHash('sha256').update(bytes).digest('hex'),
        md5: createHash('md5').update(bytes).digest('base64'),
      });
      if (last) this.write(last);
    }
    try {
      // The fsync needs the bytes written, not hashed: it goes while the MD5 thread, the slower
      // hash, is still on the last pieces (a 1 MiB put's fsync and MD5 take ~0.6 ms each).
      await this.threadWritten;
      await this.written;
      await this.syncing;
      if (this.failure) throw this.failure;
      if (this.sync) {
        try {
          await this.file.sync();
        } catch (error) {
          throw fileSystemFailure(error);
        }
      }
      await Promise.all(this.slotFree);
      if (this.failure) throw this.failure;
    } catch (error) {
      // The job ends with its answer; nothing of it may still be going when the put gives up.
      await digest.catch(() => undefined);
      throw error;
    }
    const digests = await digest;
    this.giveBackRing();
    return digests;
  }

  /** Stops: once this resolves, nothing writes to the file any more. */
  async abandon(): Promise<void> {
    this.stopped = true;
    await Promise.all([this.job?.drop(), this.md5Job?.drop()]);
    await this.written;
    await this.syncing;
    this.giveBackRing();
  }

  /** Once neither this put nor the thread will touch the ring again. */
  private giveBackRing(): void {
    if (this.ringGivenBack) return;
    this.ringGivenBack = true;
    if (spareRings.length < SPARE_RINGS) spareRings.push(this.ring);
  }

  private async takeSlot(): Promise<Uint8Array> {
    this.slot = this.pieces++ % PIECES_IN_FLIGHT;
    await this.slotFree[this.slot];
    if (this.failure) throw this.failure;
    this.filled = 0;
    this.piece = new Uint8Array(this.ring, this.slot * PIECE_BYTES, PIECE_BYTES);
    return this.piece;
  }

  private handOver(bytes: Uint8Array): void {
    const fd = this.file.fd ?? null;
    this.job ??= startBlobJob(this.ring, fd, 'sha256');
    this.md5Job ??= startBlobJob(this.ring, null, 'md5');
    const failed = (error: Error) => {
      this.failure ??= error;
    };
    const written = this.job.piece(bytes.byteOffset, bytes.length).catch(failed);
    if (fd !== null) this.threadWritten = written;
    // The piece's place in the ring is free once both threads are done with it.
    const done = Promise.all([
      written,
      this.md5Job.piece(bytes.byteOffset, bytes.length).catch(failed),
    ]);
    this.slotFree[this.slot] = fd === null ? Promise.all([done, this.write(bytes)]) : done;
    this.piece = null;
    this.unsynced += bytes.length;
    if (this.sync && this.unsynced >= SYNC_EVERY_BYTES && !this.syncing) {
      this.unsynced = 0;
      this.syncing = this.syncInBackground();
    }
  }

  /** Writes `bytes` here, after those before them; resolves once written (or failed). */
  private write(bytes: Uint8Array): Promise<void> {
    this.written = this.written.then(async () => {
      if (this.failure || this.stopped) return;
      try {
        await this.file.write(bytes);
      } catch (error) {
        this.failure ??= fileSystemFailure(error);
      }
    });
    return this.written;
  }

  /** Makes what is written so far durable while the rest arrives. */
  private async syncInBackground(): Promise<void> {
    // After the writes made here so far; the thread's own writes it takes as far as they got.
    await this.written;
    try {
      if (!this.failure && !this.stopped) await this.file.sync();
    } catch (error) {
      // A failed fsync may drop the pages it could not write: the file is lost either way.
      this.failure ??= fileSystemFailure(error);
    } finally {
      this.syncing = null;
    }
  }
}
