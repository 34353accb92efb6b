import { createHash, type Hash } from 'node:crypto';
import { ServiceError } from '../../protocol/errors.ts';

/**
 * Content-MD5: the MD5 of a file's bytes, in base64, as HTTP (RFC 1864) and Azure Blob clients
 * write it. Every save's bytes are hashed as they stream by, by the blob store beside its
 * sha256 (in a thread of their own: storage/blobs/hashed-writer.ts), so every version keeps its
 * MD5 and serves it; a request that states one is checked against it before anything is
 * recorded. Blocks staged for a block list are hashed here, as they arrive (Md5Watch).
 */

/** An MD5 as it goes on the wire: base64 of the 16 bytes. */
const BASE64_MD5 = /^[A-Za-z0-9+/]{22}==$/;

/** Hashes chunks as they pass. */
export class Md5Watch {
  private readonly hash: Hash = createHash('md5');

  see(chunk: Uint8Array): void {
    this.hash.update(chunk);
  }

  /** The MD5 in base64 (call once, after the last chunk). */
  digest(): string {
    return this.hash.digest('base64');
  }
}

/**
 * Whether a stated MD5 (a header's value) is the one computed: a value that is not base64 of
 * 16 bytes matches nothing.
 */
export function md5Matches(stated: string, computed: string): boolean {
  const value = stated.trim();
  return BASE64_MD5.test(value) && value === computed;
}

/** The refusal of a REST save whose Content-MD5 is not its bytes' MD5. */
export function contentMd5Mismatch(stated: string, computed: string): ServiceError {
  return new ServiceError(
    'content_md5_mismatch',
    `The Content-MD5 header (${stated.trim().slice(0, 64)}) is not the MD5 of the bytes received (${computed}): nothing was saved. Send base64 of the 16-byte MD5 of the body, or no Content-MD5.`,
    { content_md5_received: stated.trim().slice(0, 64), content_md5_computed: computed },
  );
}
