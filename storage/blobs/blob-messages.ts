/** What the main thread and the blob thread (blob-worker.mjs) say to each other. */
export type BlobThreadRequest =
  /**
   * A new job: its ring, the hash it computes and, when the thread is to write the bytes, the
   * file's descriptor.
   */
  | { job: number; ring: SharedArrayBuffer; fd: number | null; algorithm: BlobHashAlgorithm }
  /** The next bytes: written, then hashed; answered once the ring's bytes may be reused. */
  | { job: number; offset: number; length: number }
  | { job: number; digest: true }
  /** Answered once the thread is done with the job's ring and descriptor for good. */
  | { job: number; drop: true };

/** The hashes a blob thread computes: the store's key, and Content-MD5 (in a thread of its own). */
export type BlobHashAlgorithm = 'sha256' | 'md5';

export type BlobThreadReply =
  | { job: number; digest?: string }
  /** A write failed; the job writes nothing more and answers this to what follows. */
  | { job: number; error: { message: string; code: string | undefined } };
