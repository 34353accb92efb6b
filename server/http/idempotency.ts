import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { ServiceError } from '../../protocol/errors.ts';
import type { Driver } from '../../storage/driver.ts';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
} from '../../storage/idempotency.ts';
import type { EngineResponse } from './engine.ts';

/** A first call still running after this long is taken to have died; its key is free again. */
const STALE_CLAIM_SECONDS = 120;

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
 * Runs a write at most once per `Idempotency-Key` (routes.md): the same key with the same
 * request replays the first answer for 24 hours; with another request it is refused. Keys are
 * scoped to the caller (or to anonymous callers together) and stored hashed; answers are
 * stored encrypted under the key, so a stored sign-up token is no plain-text token.
 * Answers of the service's own failures (5xx) are not kept: a retry runs again.
 */
export async function runIdempotent(
  driver: Driver,
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
  const keyHash = sha256(`${request.scope}\u0000${request.key}`);
  const requestHash = sha256(request.fingerprint);
  let existing = await claimIdempotencyKey(driver, keyHash, requestHash);
  if (existing && existing.response === null && existing.ageSeconds > STALE_CLAIM_SECONDS) {
    await releaseIdempotencyKey(driver, keyHash);
    existing = await claimIdempotencyKey(driver, keyHash, requestHash);
  }
  if (existing) {
    if (existing.requestHash !== requestHash) {
      throw new ServiceError(
        'idempotency_key_reused',
        'That Idempotency-Key was used with another request. Use a new key for a new request.',
      );
    }
    if (existing.response === null) {
      throw new ServiceError(
        'idempotency_key_in_use',
        'The first request with that Idempotency-Key is still running. Retry in a moment with the same key.',
      );
    }
    return open(existing.response, request.key, request.scope);
  }
  let response: EngineResponse;
  try {
    response = await execute();
  } catch (error) {
    await releaseIdempotencyKey(driver, keyHash);
    throw error;
  }
  if (response.status >= 500) await releaseIdempotencyKey(driver, keyHash);
  else await completeIdempotencyKey(driver, keyHash, seal(response, request.key, request.scope));
  return response;
}
