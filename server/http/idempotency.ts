import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { ServiceError } from '../../protocol/errors.ts';
import { onceByKey } from '../../actors/kernel/idempotency.ts';
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

/**
 * Runs a write at most once per `Idempotency-Key` (protocol/documents/protocol.md,
 * "Idempotency"): the same key with the same request replays the first answer for 24 hours;
 * with another request it is refused. Keys are scoped to the caller (or to anonymous callers
 * together) and stored hashed; answers are stored encrypted under the key. Operations whose answer holds a secret (`mintsSecret`) never
 * come here: the route refuses their keys, so no replay hands a secret to another request. The
 * claim, the write and the stored answer commit together (actors/kernel/idempotency.ts).
 */
export async function runIdempotent(
  services: Services,
  request: { key: string; scope: string; fingerprint: string },
  execute: () => Promise<EngineResponse>,
): Promise<EngineResponse> {
  if (!/^[\x21-\x7e]{1,255}$/.test(request.key)) {
    throw new ServiceError(
      'invalid_input',
      'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces; a random UUID is best.',
      { field: 'Idempotency-Key' },
    );
  }
  return onceByKey(
    services,
    {
      keyHash: sha256(`${request.scope}\u0000${request.key}`),
      requestHash: sha256(request.fingerprint),
    },
    async () => {
      const answer = await execute();
      return { answer, keep: answer.status < 500 };
    },
    (answer) => seal(answer, request.key, request.scope),
    (stored) => open(stored, request.key, request.scope),
  );
}
