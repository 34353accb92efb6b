import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { ByteBody } from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { IDEMPOTENCY_KEY_PATTERN } from '../../protocol/operation.ts';
import { onceByKey } from '../../actors/kernel/idempotency.ts';
import type { Principal } from '../../actors/kernel/principal.ts';
import type { Services } from '../../actors/kernel/services.ts';
import type { EngineResponse } from './engine.ts';

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function cipherKey(key: string, scope: string): Buffer {
  return Buffer.from(hkdfSync('sha256', key, scope, 'idempotency-response', 32));
}

function seal(response: EngineResponse, key: string, scope: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', cipherKey(key, scope), iv);
  const plain = JSON.stringify({
    status: response.status,
    headers: response.headers,
    body: Buffer.from(response.body).toString('base64'),
  });
  const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64');
}

function open(stored: string, key: string, scope: string): EngineResponse {
  const bytes = Buffer.from(stored, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', cipherKey(key, scope), bytes.subarray(0, 12));
  decipher.setAuthTag(bytes.subarray(12, 28));
  const plain = Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString(
    'utf8',
  );
  const saved = JSON.parse(plain) as {
    status: number;
    headers: Record<string, string>;
    body: string;
  };
  return {
    status: saved.status,
    headers: { ...saved.headers, 'idempotent-replayed': 'true' },
    body: Buffer.from(saved.body, 'base64'),
  };
}

/** The refusal of a key that is not 1 to 255 printable ASCII characters. */
function checkKey(key: string): void {
  if (!IDEMPOTENCY_KEY_PATTERN.test(key)) {
    throw new ServiceError(
      'invalid_input',
      'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces; a random UUID is best.',
      { field: 'Idempotency-Key' },
    );
  }
}

/**
 * Whose Idempotency-Keys a request's are: a key replays only to the caller that used it
 * (protocol/documents/protocol.md, "Idempotency"). An agent's keys are its own, and a restricted
 * token's are its scopes' own: a replay hands no answer across a token's reach (a `read` or
 * `workspace:<id>` token repeating a full token's key runs, and is refused by its scope). Without
 * a token, the caller's address (as the rate limits count it) is the owner: two callers never
 * share an anonymous key.
 */
export function idempotencyScope(principal: Principal | null, address: () => string): string {
  if (principal === null) return `anonymous ${address()}`;
  // An unsigned call of an agent that requires signatures never shares a signed call's answers.
  const reach = principal.signatureRequired ? ' unsigned' : '';
  const grant = principal.token;
  if (!grant?.restricted) return `${principal.agentId}${reach}`;
  return `${principal.agentId} ${[...grant.scopes].sort().join(' ')}${reach}`;
}

function keyHash(request: { key: string; scope: string }): string {
  return sha256(`${request.scope}\u0000${request.key}`);
}

/**
 * Runs a write at most once per `Idempotency-Key` (protocol/documents/protocol.md,
 * "Idempotency"): the same key with the same request replays the first answer for 24 hours;
 * with another request it is refused. Keys are scoped to the caller (idempotencyScope) and
 * stored hashed; answers are stored encrypted under the key. Operations whose answer holds a secret (`mintsSecret`) never
 * come here: the route refuses their keys, so no replay hands a secret to another request. The
 * claim, the write and the stored answer commit together (actors/kernel/idempotency.ts).
 */
export async function runIdempotent(
  services: Services,
  request: { key: string; scope: string; fingerprint: string },
  execute: () => Promise<EngineResponse>,
): Promise<EngineResponse> {
  checkKey(request.key);
  return onceByKey(
    services,
    { keyHash: keyHash(request), requestHash: sha256(request.fingerprint) },
    async () => {
      const answer = await execute();
      return { answer, keep: answer.status < 500 };
    },
    (answer) => seal(answer, request.key, request.scope),
    (stored) => open(stored, request.key, request.scope),
  );
}

/**
 * A request body that hashes the bytes going through it: the fingerprint of a keyed byte write
 * holds the body's sha256, known only once the body has gone by. Read once, by the handler or
 * by `readRest`.
 */
export class HashedBody implements ByteBody {
  private readonly hash = createHash('sha256');
  private started = false;
  private digest: string | undefined;

  constructor(private readonly inner: ByteBody) {}

  get declaredLength(): number | null {
    return this.inner.declaredLength;
  }

  get contentType(): string | undefined {
    return this.inner.contentType;
  }

  /** Whether nothing of the body was read yet. */
  get unread(): boolean {
    return !this.started;
  }

  /** The hex sha256 of the whole body, once read to its end. */
  get sha256(): string | undefined {
    return this.digest;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    if (this.started) throw new Error('A request body is read once.');
    this.started = true;
    for await (const chunk of this.inner) {
      this.hash.update(chunk);
      yield chunk;
    }
    this.digest = this.hash.digest('hex');
  }

  /** Reads (and hashes) what the handler left unread; the body's limit holds as ever. */
  async readRest(): Promise<string> {
    if (!this.started) for await (const chunk of this) void chunk;
    if (this.digest === undefined) {
      throw new Error('The request body was left half read; its fingerprint is unknown.');
    }
    return this.digest;
  }
}

/** Thrown where a keyed byte write needs its fingerprint before its body was read. */
class BodyUnread extends Error {}

/**
 * `runIdempotent` for a write whose body is a byte stream (`write_file`): its fingerprint
 * (`fingerprint(sha256)`, from the method, the route, the path and query fields and the body's
 * sha256) is known only once the body is read. A key already answered: the body is read and
 * hashed on the way, stored nowhere (no blob, no quota held), then replayed or refused
 * (`idempotency_key_reused`). A new key: the handler streams the body where it goes as without
 * a key, and the key is claimed in the transaction that commits the write, when the sha256 is
 * known. Two requests with one key at once both stream; one commits, the other's claim fails,
 * its transaction rolls back, its reservation and its blob (unless the first's version uses
 * the same bytes) go at once (actors/files/upload-reservations.ts `settle`), and it replays the
 * first's answer. The body is read once, so the handler runs at most once per request.
 */
export async function runIdempotentBytes(
  services: Services,
  request: {
    key: string;
    scope: string;
    body: HashedBody;
    fingerprint: (bodySha256: string) => string;
  },
  execute: () => Promise<EngineResponse>,
): Promise<EngineResponse> {
  checkKey(request.key);
  const { body } = request;
  let executed = false;
  const keyed = {
    keyHash: keyHash(request),
    // Read when an earlier answer is compared and when the key is claimed (actors/kernel/idempotency.ts).
    get requestHash(): string {
      const digest = body.sha256;
      if (digest !== undefined) return sha256(request.fingerprint(digest));
      if (body.unread && !executed) throw new BodyUnread();
      throw new Error('A keyed byte write committed before its body was read whole.');
    },
  };
  const once = () =>
    onceByKey(
      services,
      keyed,
      async () => {
        // A second run would read a body already read: say retry instead (the first still runs).
        if (executed || !body.unread) {
          throw new ServiceError(
            'idempotency_key_in_use',
            'Another request with that Idempotency-Key is running. Retry in a moment with the same key.',
          );
        }
        executed = true;
        const answer = await execute();
        await body.readRest();
        return { answer, keep: answer.status < 500 };
      },
      (answer) => seal(answer, request.key, request.scope),
      (stored) => open(stored, request.key, request.scope),
    );
  try {
    return await once();
  } catch (error) {
    if (!(error instanceof BodyUnread)) throw error;
  }
  // The key has an answer: hash the body and throw its bytes away, then replay or refuse.
  await body.readRest();
  return once();
}
