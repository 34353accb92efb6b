import type { Services } from '../../actors/services.ts';
import { ServiceError } from '../../protocol/errors.ts';
import type { Operation } from '../../protocol/operation.ts';
import { authenticate, run } from '../invoke.ts';
import type { EngineRequest, EngineResponse } from './engine.ts';
import { runIdempotent } from './idempotency.ts';
import { jsonResponse } from './problem.ts';

const DEFAULT_MAX_BODY = 64 * 1024;

/** The bearer token of a request: undefined when none was sent; refused when malformed. */
export function bearerToken(headers: Record<string, string>): string | undefined {
  const header = headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  if (!match) {
    throw new ServiceError(
      'unauthorized',
      'Send the token as `Authorization: Bearer <api_token>`.',
    );
  }
  return match[1];
}

/** Query parameters as one value each; a repeated one is refused rather than guessed at. */
function queryInput(query: string): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  if (query === '') return input;
  for (const [name, value] of new URLSearchParams(query)) {
    if (name in input)
      throw new ServiceError('invalid_input', `The query parameter \`${name}\` is given twice.`, {
        field: name,
      });
    input[name] = value;
  }
  return input;
}

const JSON_TYPES = /^(application\/(json|[\w.+-]+\+json|x-www-form-urlencoded))\s*(;|$)/i;

/** The JSON object of a body; an empty body is an empty object. */
async function bodyInput(request: EngineRequest, limit: number): Promise<Record<string, unknown>> {
  const type = request.headers['content-type'];
  // curl -d sends form encoding by default; a JSON body under it is still taken.
  if (type !== undefined && !JSON_TYPES.test(type)) {
    throw new ServiceError(
      'unsupported_media_type',
      'Send the body as JSON with `Content-Type: application/json`.',
    );
  }
  const bytes = await request.body(limit);
  if (bytes.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new ServiceError(
      'invalid_json',
      'The body is not valid JSON. Send one JSON object, e.g. {"name": "..."}.',
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ServiceError('invalid_input', 'The body must be one JSON object.', {
      field: '(body)',
    });
  }
  return value as Record<string, unknown>;
}

/** Serves one operation over HTTP: path, query or body in; the operation's JSON out. */
export async function serveOperation(
  services: Services,
  operation: Operation,
  params: Record<string, string>,
  request: EngineRequest,
): Promise<EngineResponse> {
  // The caller is checked before the body is read: a stranger's body is never read.
  const principal = await authenticate(services, operation, bearerToken(request.headers));
  const takesBody = operation.method === 'POST' || operation.method === 'PUT';
  const fields = takesBody
    ? await bodyInput(request, operation.maxBodyBytes ?? DEFAULT_MAX_BODY)
    : queryInput(request.query);
  for (const name of Object.keys(params)) {
    if (name in fields) {
      throw new ServiceError(
        'unknown_field',
        `\`${name}\` belongs in the path, not in the request.`,
        { fields: [name] },
      );
    }
  }
  const input = Object.keys(params).length === 0 ? fields : { ...fields, ...params };
  const key = request.headers['idempotency-key'];
  if (key === undefined || operation.readOnly || !takesBody) {
    return jsonResponse(operation.status, await run(services, operation, principal, input, request));
  }
  const execute = async () =>
    jsonResponse(operation.status, await run(services, operation, principal, input, request));
  return runIdempotent(
    services,
    {
      key,
      scope: principal ? principal.agentId : 'anonymous',
      fingerprint: JSON.stringify([operation.method, operation.path, params, fields]),
    },
    execute,
  );
}
