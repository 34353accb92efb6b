import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { ServiceError } from '../../protocol/errors.ts';
import {
  SIGNATURE_WINDOW_SECONDS,
  signatureFault,
  type SignatureClaim,
} from '../../protocol/message-signature.ts';
import { claimNonce, findKey, touchKey, type FoundKey } from '../../storage/kernel/agent-keys.ts';
import type { Queryable } from '../../storage/driver.ts';
import type { Clock } from './clock.ts';
import { SharedReads } from './shared-reads.ts';

const CACHE_LIMIT = 50_000;
/** A key's `last_used_at` is written at most this often. */
const TOUCH_EVERY_MS = 60_000;
/** The longest nonce taken, in bytes of UTF-8. */
const MAX_NONCE_BYTES = 256;

/** An RFC 7638 SHA-256 thumbprint in base64url: the form of every key id here. */
const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;

/** What a valid signature proves: the agent whose live key signed, and which key. */
export interface SignatureProof {
  readonly agentId: string;
  readonly keyId: string;
}

/** What a signature must cover besides `@method`, `@authority` and `@path` (always). */
export interface Coverage {
  /** The request has a query: `@query`. */
  readonly query: boolean;
  /** It carries `Authorization`: `authorization`. */
  readonly authorization: boolean;
  /** It has a body: `content-digest`. */
  readonly body: boolean;
}

/** The components every request signature must cover here, for this request. */
export function requiredComponents(coverage: Coverage): string[] {
  return [
    '@method',
    '@authority',
    '@path',
    ...(coverage.query ? ['@query'] : []),
    ...(coverage.authorization ? ['authorization'] : []),
    ...(coverage.body ? ['content-digest'] : []),
  ];
}

/** One key as the cache keeps it: whose, its public key, and when its use was last noted. */
interface CachedKey {
  readonly agentId: string;
  readonly publicKey: KeyObject;
  touchedAtMs: number;
}

/**
 * Verifies RFC 9421 signatures against agents' live keys (migration 048): the key named by
 * `keyid`, `alg="ed25519"`, `created` within the window of the service's clock, `expires` not
 * past, the components the request must cover, the Ed25519 signature over the rebuilt base,
 * then the nonce, taken once in the database (so once across processes). Live keys are cached;
 * a change to an agent's keys (here or in another process, by the tokens' notice) forgets them.
 */
export class RequestSignatures {
  private readonly cache = new Map<string, CachedKey>();
  /** Reads of a key by its id: callers at once share one (./shared-reads.ts). */
  private readonly reads = new SharedReads<CachedKey | null>();

  constructor(
    private readonly db: () => Queryable,
    private readonly writer: () => Queryable,
    private readonly clock: Clock,
  ) {}

  /**
   * The proof of the first signature whose `keyid` is a key added here, or null when none is
   * (a signature for another verifier, e.g. a Web Bot Auth directory key, is ignored). A
   * signature by a key of ours that does not hold is refused with `401 invalid_signature`.
   * `unknown` collects the key ids that named no key here, for the words of a later refusal.
   */
  async verify(
    claims: readonly SignatureClaim[],
    required: readonly string[],
    unknown: string[] = [],
  ): Promise<SignatureProof | null> {
    for (const claim of claims) {
      if (claim.keyId === undefined) continue;
      // Keys here are named by their thumbprint: any other keyid is no key of ours, unasked.
      if (!THUMBPRINT.test(claim.keyId)) {
        unknown.push(claim.keyId.slice(0, 64));
        continue;
      }
      const key = this.cache.get(claim.keyId) ?? (await this.load(claim.keyId));
      if (key === null) {
        unknown.push(claim.keyId);
        continue;
      }
      return this.check(claim, claim.keyId, key, required);
    }
    return null;
  }

  private async check(
    claim: SignatureClaim,
    keyId: string,
    key: CachedKey,
    required: readonly string[],
  ): Promise<SignatureProof> {
    if (claim.alg !== 'ed25519') {
      throw signatureFault(
        'alg',
        `Signature \`${claim.label}\` must say \`alg="ed25519"\`: keys here are Ed25519.`,
      );
    }
    const nowSeconds = Math.floor(this.clock.now() / 1000);
    const created = claim.created;
    if (typeof created !== 'number' || !Number.isInteger(created)) {
      throw signatureFault(
        'created',
        `Signature \`${claim.label}\` must carry \`created\`: the UNIX time it was made, in seconds.`,
      );
    }
    if (Math.abs(nowSeconds - created) > SIGNATURE_WINDOW_SECONDS) {
      throw signatureFault(
        'created',
        `Signature \`${claim.label}\` was created at ${created}, more than ${SIGNATURE_WINDOW_SECONDS} s from the service's clock (${nowSeconds}): sign each request when you send it, and check your clock.`,
      );
    }
    const expires = claim.expires;
    if (expires !== undefined && (typeof expires !== 'number' || expires <= nowSeconds)) {
      throw signatureFault(
        'expired',
        `Signature \`${claim.label}\` expired (\`expires\` ${String(expires)}, now ${nowSeconds}).`,
      );
    }
    const nonce = claim.nonce;
    if (
      nonce !== undefined &&
      (typeof nonce !== 'string' || nonce === '' || Buffer.byteLength(nonce) > MAX_NONCE_BYTES)
    ) {
      throw signatureFault('nonce', `\`nonce\` must be a string of 1 to ${MAX_NONCE_BYTES} bytes.`);
    }
    const missing = required.filter((name) => !claim.covered.includes(name));
    if (missing.length > 0) {
      throw new ServiceError(
        'invalid_signature',
        `Signature \`${claim.label}\` does not cover ${missing.map((name) => `"${name}"`).join(', ')}: a request signature here covers ${required.map((name) => `"${name}"`).join(' ')}.`,
        { reason: 'coverage', missing, sign: [...required] },
      );
    }
    const signature = claim.signature;
    if (signature?.length !== 64) {
      throw signatureFault(
        'malformed',
        `\`Signature\` has no 64-byte Ed25519 signature for \`${claim.label}\` (\`${claim.label}=:<base64>:\`).`,
      );
    }
    const base = claim.base();
    if (!verify(null, Buffer.from(base), key.publicKey, signature)) {
      throw new ServiceError(
        'invalid_signature',
        `Signature \`${claim.label}\` does not verify with key ${keyId}: the request differs from what was signed (method, authority, path, query, a covered header or its parameters), or another key signed it. \`signature_base\` is the base rebuilt here.`,
        { reason: 'signature', signature_base: withoutCredentials(base) },
      );
    }
    if (nonce !== undefined) {
      const expiresAt = new Date((created + SIGNATURE_WINDOW_SECONDS + 1) * 1000);
      const taken = await claimNonce(
        this.writer(),
        keyId,
        nonce,
        expiresAt,
        new Date(this.clock.now()),
      );
      if (!taken) {
        throw signatureFault(
          'nonce_replayed',
          `The nonce of signature \`${claim.label}\` was used already: a nonce is taken once. Sign again with a new one.`,
        );
      }
    }
    this.touch(keyId, key);
    return { agentId: key.agentId, keyId };
  }

  /**
   * Refuses, as a signature by it would be, a key that was revoked (or whose agent was suspended)
   * since it signed something held open: a socket's handshake.
   */
  async assertLive(keyId: string): Promise<void> {
    if (this.cache.has(keyId)) return;
    if ((await this.load(keyId)) === null) {
      throw signatureFault('key_revoked', `The key ${keyId} is no longer known here.`);
    }
  }

  /** Forgets the agent's keys (they changed, maybe in another process). */
  forgetAgent(agentId: string): void {
    this.reads.invalidate();
    for (const [keyId, key] of this.cache) if (key.agentId === agentId) this.cache.delete(keyId);
  }

  /** Forgets every key (word from other processes may have been lost). */
  forgetAll(): void {
    this.reads.invalidate();
    this.cache.clear();
  }

  /**
   * A live key from the database (cached), null when no agent added it; refusals otherwise.
   * Callers at once share one read, unless inside a request's transaction (on PGlite, which
   * holds the one connection, it must read through it).
   */
  private load(keyId: string): Promise<CachedKey | null> {
    const db = this.db();
    if (db !== this.writer()) return this.read(db, keyId, this.reads.now);
    return this.reads.share(keyId, (generation) => this.read(db, keyId, generation));
  }

  private async read(db: Queryable, keyId: string, generation: number): Promise<CachedKey | null> {
    const found = await findKey(db, keyId);
    if (!found) return null;
    refuseUnusable(found);
    const key: CachedKey = {
      agentId: found.agentId,
      publicKey: publicKeyOf(found.publicKey),
      touchedAtMs: 0,
    };
    // Read before the agent's keys changed: it may show the key as it was, so it is not kept.
    if (!this.reads.kept(generation)) return key;
    if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(keyId, key);
    return key;
  }

  /** Notes the use in the background, at most once a minute a key: a failure costs only the note. */
  private touch(keyId: string, key: CachedKey): void {
    const nowMs = this.clock.now();
    if (nowMs - key.touchedAtMs < TOUCH_EVERY_MS) return;
    key.touchedAtMs = nowMs;
    touchKey(this.writer(), keyId, new Date(nowMs)).catch(() => undefined);
  }
}

/**
 * The base as a refusal shows it: the `authorization` line's value (a bearer token) left out, so
 * that a problem written to a log does not carry the token with it.
 */
function withoutCredentials(base: string): string {
  return base
    .split('\n')
    .map((line) =>
      line.startsWith('"authorization": ') ? '"authorization": <your Authorization header>' : line,
    )
    .join('\n');
}

function refuseUnusable(found: FoundKey): void {
  if (found.agentSuspended) {
    throw new ServiceError(
      'unauthorized',
      'This agent is suspended by the operator: its keys and tokens do not work. Its changes feed said why.',
      { reason: 'suspended' },
    );
  }
  if (found.revokedAt !== null) {
    throw signatureFault(
      'key_revoked',
      `The key ${found.keyId} was revoked at ${found.revokedAt.toISOString()}: sign with a live key (list_keys shows them).`,
    );
  }
}

/** The Ed25519 public key of 32 raw bytes, as node:crypto verifies with it. */
export function publicKeyOf(raw: Uint8Array): KeyObject {
  return createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') },
    format: 'jwk',
  });
}
