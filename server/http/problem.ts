import { storageProblem } from '../../actors/kernel/storage-problems.ts';
import { ServiceError, toProblem } from '../../protocol/errors.ts';
import { ClientGone } from './body-stream.ts';
import { RateLimited } from './rate-limit.ts';
import type { EngineResponse } from './engine.ts';
import { jsonText } from '../../actors/kernel/lasting-answer.ts';

/**
 * Any error as the caller sees it: ServiceErrors as they are, storage failures as
 * actors/kernel/storage-problems.ts maps them, everything else as a 500.
 */
export function asServiceError(error: unknown, log: (error: unknown) => void): ServiceError {
  if (error instanceof ServiceError) return error;
  const storage = storageProblem(error);
  if (storage) return storage;
  // Nobody is left to answer, and nothing went wrong on the service's side: no log line.
  if (!(error instanceof ClientGone)) log(error);
  return new ServiceError(
    'internal_error',
    'The service failed on its side and wrote nothing. Try again; if it persists, send feedback.',
  );
}

/** Seconds to wait before retrying, where the default second is too soon. */
const RETRY_AFTER_SECONDS: Partial<Record<string, string>> = {
  storage_unavailable: '5',
  outcome_unknown: '5',
  storage_full: '60',
};

export function problemResponse(error: ServiceError, baseUrl: string): EngineResponse {
  const headers: Record<string, string> = { 'content-type': 'application/problem+json' };
  if (error.status === 401)
    headers['www-authenticate'] = 'Bearer realm="service", error="invalid_token"';
  if (error.status === 503 || error.code === 'storage_full')
    headers['retry-after'] = RETRY_AFTER_SECONDS[error.code] ?? '1';
  if (Array.isArray(error.extra.allow)) headers.allow = error.extra.allow.join(', ');
  if (error instanceof RateLimited) Object.assign(headers, error.headers);
  for (const name in error.responseHeaders) headers[name] = error.responseHeaders[name] as string;
  return {
    status: error.status,
    headers,
    body: JSON.stringify(toProblem(error, baseUrl)),
    close: error.code === 'payload_too_large',
  };
}

export function jsonResponse(status: number, body: unknown): EngineResponse {
  // A lasting answer (actors/kernel/lasting-answer.ts) is serialised once, not per request.
  return { status, headers: { 'content-type': 'application/json' }, body: jsonText(body) };
}
