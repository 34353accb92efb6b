import type { EngineResponse } from './engine.ts';

/**
 * Cross-origin access for browsers (CORS). The service authenticates with a bearer token, never
 * a cookie, so a browser page elsewhere learns nothing it could not fetch itself: the public
 * documents are open to every origin, and /mcp to the origins its door admits.
 */

/** Request headers a page may send: the ones the routes and MCP clients read. */
const ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'accept',
  'mcp-protocol-version',
  'mcp-session-id',
  'last-event-id',
  'idempotency-key',
].join(', ');

/** Response headers a page may read besides the CORS-safelisted ones. */
const EXPOSED_HEADERS = [
  'mcp-session-id',
  'mcp-protocol-version',
  'www-authenticate',
  'retry-after',
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'ratelimit-policy',
].join(', ');

/** How long a browser may cache a preflight answer, in seconds. */
const PREFLIGHT_MAX_AGE = '86400';

/** Headers for an answer a page from `origin` (or, with `*`, any page) may read. */
export function corsHeaders(origin: string): Record<string, string> {
  return {
    'access-control-allow-origin': origin,
    'access-control-expose-headers': EXPOSED_HEADERS,
    // An answer that names one origin differs by origin: caches must key on it.
    ...(origin === '*' ? {} : { vary: 'Origin' }),
  };
}

/** The answer to a preflight `OPTIONS`: which methods and headers a page from `origin` may use. */
export function preflightResponse(origin: string, methods: readonly string[]): EngineResponse {
  return {
    status: 204,
    headers: {
      ...corsHeaders(origin),
      'access-control-allow-methods': methods.join(', '),
      'access-control-allow-headers': ALLOWED_HEADERS,
      'access-control-max-age': PREFLIGHT_MAX_AGE,
      allow: methods.join(', '),
    },
    body: '',
  };
}

/** Headers of a public document's answer: readable from any page. */
export const PUBLIC_CORS_HEADERS: Readonly<Record<string, string>> = corsHeaders('*');

/** The preflight answer of a public document (GET, and HEAD with it: server/http/router.ts). */
export const PUBLIC_PREFLIGHT: EngineResponse = preflightResponse('*', ['GET', 'HEAD', 'OPTIONS']);

/**
 * The preflight answer of socket.io's polling transport (GET and POST under /socket.io/): the
 * service answers it, not engine.io (server/app.ts says why).
 */
export const SOCKET_PREFLIGHT: EngineResponse = preflightResponse('*', ['GET', 'POST', 'OPTIONS']);
