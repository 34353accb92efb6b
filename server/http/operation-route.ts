import type { Services } from '../../actors/kernel/services.ts';
import { ServiceError } from '../../protocol/errors.ts';
import {
  isBodyless,
  isMarkdown,
  isReply,
  resolveBinding,
  type ByteReply,
  type ResolvedBinding,
} from '../../protocol/binding.ts';
import { refuseHostileShape } from '../../protocol/input-guard.ts';
import {
  jsonBodyLimit,
  restParameter,
  takesIdempotencyKey,
  type Operation,
} from '../../protocol/operation.ts';
import { authenticate, run, type AnyHandler } from '../invoke.ts';
import { negotiateFormat } from './accept.ts';
import { byteResponse } from './byte-reply.ts';
import type { EngineRequest, EngineResponse } from './engine.ts';
import { runIdempotent } from './idempotency.ts';
import { jsonResponse } from './problem.ts';

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

/** An operation's binding, resolved once per operation rather than on every request. */
interface RoutePlan {
  binding: ResolvedBinding;
  /** The most body bytes taken (JSON or bytes). */
  bodyLimit: number;
  /** Request headers the handler sees. */
  requestHeaders: readonly string[];
  statuses: ReadonlySet<number>;
  replyHeaders: ReadonlySet<string>;
  /** JSON (or nothing) in, JSON out, no headers: the handler is called as before bindings. */
  plain: boolean;
  /** Writes whose answer can be kept for an Idempotency-Key (not byte streams). */
  idempotent: boolean;
}

const plans = new WeakMap<Operation, RoutePlan>();

function planFor(operation: Operation): RoutePlan {
  let plan = plans.get(operation);
  if (plan) return plan;
  const binding = resolveBinding(operation.method, operation.binding);
  const requestHeaders = Object.keys(binding.requestHeaders);
  plan = {
    binding,
    bodyLimit: binding.body.kind === 'bytes' ? binding.body.maxBytes : jsonBodyLimit(operation),
    requestHeaders,
    statuses: new Set([operation.status, ...binding.statuses.map((entry) => entry.status)]),
    replyHeaders: new Set(Object.keys(binding.replyHeaders)),
    plain:
      binding.body.kind !== 'bytes' && binding.reply.kind === 'json' && requestHeaders.length === 0,
    // A secret-minting operation refuses a key before this is read (secretNotReplayed).
    idempotent: takesIdempotencyKey(operation),
  };
  plans.set(operation, plan);
  return plan;
}

export interface ServeOptions {
  /** The handler, when it is not the operation's entry in HANDLERS (test-only operations). */
  handler?: AnyHandler;
  /** Where failures of a byte source are logged (the answer is already under way). */
  log?: (error: unknown) => void;
}

/**
 * Serves one operation over HTTP as its binding says (protocol/binding.ts): path and query
 * in, plus a JSON body or a byte stream; JSON, markdown or bytes out, with the statuses and
 * headers the binding declares.
 */
export async function serveOperation(
  services: Services,
  operation: Operation,
  params: Record<string, string>,
  request: EngineRequest,
  options: ServeOptions = NO_OPTIONS,
): Promise<EngineResponse> {
  const plan = planFor(operation);
  const key = request.headers['idempotency-key'];
  if (key !== undefined && operation.mintsSecret) throw secretNotReplayed(operation);
  // The caller is checked before the body is read: a stranger's body is never read.
  const principal = await authenticate(services, operation, bearerToken(request.headers));
  let format: 'json' | 'markdown' = 'json';
  const reply = plan.binding.reply;
  if (reply.kind === 'json_or_markdown') {
    const chosen = negotiateFormat(request.headers.accept, reply.prefer ?? 'json');
    if (chosen === null) {
      throw new ServiceError(
        'not_acceptable',
        'This route answers `application/json` or `text/markdown`; allow one in `Accept`.',
      );
    }
    format = chosen;
  }
  const bodyKind = plan.binding.body.kind;
  const fields =
    bodyKind === 'json' ? await bodyInput(request, plan.bodyLimit) : queryInput(request.query);
  // Refused here, before the handler runs, when the declared length is over the limit.
  const body = bodyKind === 'bytes' ? request.stream(plan.bodyLimit) : undefined;
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
  // The request itself serves as the caller (its signal) on the plain path: no object more.
  const caller = plan.plain
    ? request
    : {
        get signal() {
          return request.signal;
        },
        transport: { body, headers: pickHeaders(request.headers, plan.requestHeaders), format },
      };
  const log = options.log ?? ignore;
  if (key === undefined || !plan.idempotent) {
    const result = await run(services, operation, principal, input, caller, options.handler);
    return answer(plan, operation, request, result, log);
  }
  const execute = async () =>
    answer(
      plan,
      operation,
      request,
      await run(services, operation, principal, input, caller, options.handler),
      log,
    );
  // Refused before the request is fingerprinted: hashing a hostile shape must not fail first.
  refuseHostileShape(input, { pathField: restParameter(operation.path) });
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

const NO_OPTIONS: ServeOptions = {};

function secretNotReplayed(operation: Operation): ServiceError {
  return new ServiceError(
    'invalid_input',
    `${operation.name} takes no Idempotency-Key: its answer holds a secret shown once, and a replay would hand it to whoever sent the key again. Send the request without the header.`,
    { field: 'Idempotency-Key' },
  );
}

function ignore(): void {}

function pickHeaders(
  headers: Record<string, string>,
  names: readonly string[],
): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const name of names) {
    const value = headers[name];
    if (value !== undefined) picked[name] = value;
  }
  return picked;
}

/** The HTTP answer for a handler's result, checked against what the binding declares. */
function answer(
  plan: RoutePlan,
  operation: Operation,
  request: EngineRequest,
  result: unknown,
  log: (error: unknown) => void,
): EngineResponse | Promise<EngineResponse> {
  if (plan.plain && !isReply(result)) return jsonResponse(operation.status, result);
  let status: number = operation.status;
  let headers: Readonly<Record<string, string>> = {};
  let value = result;
  if (isReply(result)) {
    // A handler answering what its operation does not declare is a bug: a 500, logged.
    if (!plan.statuses.has(result.status)) {
      throw new Error(`${operation.name} answered ${result.status}, which it does not declare`);
    }
    for (const name of Object.keys(result.headers)) {
      if (!plan.replyHeaders.has(name)) {
        throw new Error(`${operation.name} set the header ${name}, which it does not declare`);
      }
    }
    ({ status, headers, body: value } = result);
  }
  const kind = plan.binding.reply.kind;
  if (isBodyless(status) || value === undefined)
    return { status, headers: { ...headers }, body: '' };
  if (kind === 'bytes') return byteResponse(request, status, value as ByteReply, headers, log);
  const vary: Record<string, string> = kind === 'json_or_markdown' ? { vary: 'accept' } : {};
  if (isMarkdown(value)) {
    return {
      status,
      headers: { ...headers, ...vary, 'content-type': MARKDOWN_TYPE },
      body: value.text,
    };
  }
  return {
    status,
    headers: { ...headers, ...vary, 'content-type': 'application/json' },
    body: JSON.stringify(value),
  };
}

const MARKDOWN_TYPE = 'text/markdown; charset=utf-8';
