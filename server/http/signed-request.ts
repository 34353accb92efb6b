import { createHash, timingSafeEqual } from 'node:crypto';
import type { Services } from '../../actors/kernel/services.ts';
import { requiredComponents, type SignatureProof } from '../../actors/kernel/request-signatures.ts';
import type { ByteBody } from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import {
  contentDigestOf,
  refuseDigestMismatch,
  signatureClaims,
  type ContentDigest,
} from '../../protocol/message-signature.ts';
import type { EngineRequest } from './engine.ts';

/** What a request's signature proved, and the digest its body must then hash to. */
export interface VerifiedRequest {
  readonly proof: SignatureProof;
  /** Null when the request has no body. */
  readonly digest: ContentDigest | null;
}

/**
 * Verifies the RFC 9421 signature of an HTTP request (the HTTP door's and MCP's), before its
 * body is read: null when it carries none, or none by a key added here (a signature meant for
 * another verifier is ignored). A request with a body must cover `content-digest`; the body is
 * checked against it as it is read (`checkedBytes`, `DigestCheckedBody`).
 */
export async function verifySignedRequest(
  services: Services,
  request: EngineRequest,
): Promise<VerifiedRequest | null> {
  const headers = request.headers;
  const claims = signatureClaims(
    {
      method: request.method,
      authority: headers.host ?? '',
      path: request.path,
      query: request.query,
      headers,
    },
    () => new URL(services.config.baseUrl).protocol.slice(0, -1),
  );
  if (claims === null) return null;
  const body = hasBody(headers);
  const required = requiredComponents({
    query: request.query !== '',
    authorization: headers.authorization !== undefined,
    body,
  });
  const unknown: string[] = [];
  const proof = await services.signatures.verify(claims, required, unknown);
  if (proof === null) {
    // Without a token, a signature by a key not known here leaves the caller unknown: say so.
    if (headers.authorization === undefined && unknown.length > 0) {
      throw new ServiceError(
        'unauthorized',
        `The request is signed with keyid ${unknown.map((id) => `"${id}"`).join(', ')}, which is no key added here (add_key adds one; its key_id is the keyid), and carries no token.`,
        { reason: 'unknown_key' },
      );
    }
    return null;
  }
  return { proof, digest: body ? contentDigestOf(headers) : null };
}

/** Whether the request declares a body: a non-zero length, or a chunked one. */
function hasBody(headers: Record<string, string>): boolean {
  const length = headers['content-length'];
  if (length !== undefined) return length.trim() !== '0';
  return headers['transfer-encoding'] !== undefined;
}

/** Whether a SHA-256 of the body, as it arrived, is the one `Content-Digest` named. */
function digestMatches(digest: ContentDigest, sha256: Uint8Array): boolean {
  return sha256.length === digest.sha256.length && timingSafeEqual(sha256, digest.sha256);
}

/** A whole body read, refused when it does not hash to the signed `Content-Digest`. */
export function checkedBytes(verified: VerifiedRequest | null, bytes: Buffer): Buffer {
  const digest = verified?.digest;
  if (digest && !digestMatches(digest, createHash('sha256').update(bytes).digest()))
    throw refuseDigestMismatch();
  return bytes;
}

/**
 * A streamed body that is hashed on its way and refused at its end, before its last chunk is
 * handed on, when it does not match the signed `Content-Digest`: a write that streams it fails
 * as if the client had gone away, and nothing is committed.
 */
export class DigestCheckedBody implements ByteBody {
  constructor(
    private readonly inner: ByteBody,
    private readonly digest: ContentDigest,
  ) {}

  get declaredLength(): number | null {
    return this.inner.declaredLength;
  }

  get contentType(): string | undefined {
    return this.inner.contentType;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    const hash = createHash('sha256');
    // Each chunk is handed on once the next has come: the last only after the check, so that no
    // reader ever holds the whole body unchecked.
    let held: Uint8Array | undefined;
    for await (const chunk of this.inner) {
      hash.update(chunk);
      if (held !== undefined) yield held;
      held = chunk;
    }
    if (!digestMatches(this.digest, hash.digest())) throw refuseDigestMismatch();
    if (held !== undefined) yield held;
  }
}
