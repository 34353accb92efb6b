import type { Services } from '../../actors/kernel/services.ts';
import { ServiceError } from '../../protocol/errors.ts';
import {
  isBodyless,
  isHtml,
  isMarkdown,
  isReply,
  resolveBinding,
  type ByteReply,
  type ResolvedBinding,
} from '../../protocol/binding.ts';
import { refuseHostileShape } from '../../protocol/input-guard.ts';
import {
  jsonBodyLimit,
  pathParameters,
  restParameter,
  takesIdempotencyKey,
  type Operation,
} from '../../protocol/operation.ts';
import { toJsonSchema, type JsonSchema } from '../../protocol/json-schema.ts';
import { authenticate, run, type AnyHandler, type InputPlaces } from '../invoke.ts';
import { assertSignedWrite } from '../../actors/kernel/token-scope.ts';
import { negotiateFormat } from './accept.ts';
import { byteResponse } from './byte-reply.ts';
import type { EngineRequest, EngineResponse } from './engine.ts';
import type { AddressOf } from './client-address.ts';
import { HashedBody, idempotencyScope, runIdempotent, runIdempotentBytes } from './idempotency.ts';
import { jsonResponse } from './problem.ts';
import {
  checkedBytes,
  DigestCheckedBody,
  verifySignedRequest,
  type VerifiedRequest,
} from './signed-request.ts';

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

/**
 * The rule for a JSON body (protocol/documents/protocol.md, "Requests and answers"):
 * `application/json` and any `+json` type are JSON; so is a body sent with no type, or with
 * `application/x-www-form-urlencoded`, which `curl -d` sends unless told otherwise: agents use
 * curl, and such a body is taken when it parses as JSON. Any other type is refused (415).
 */
const JSON_TYPES = /^application\/(json|[\w.+-]+\+json)\s*(;|$)/i;
const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(;|$)/i;

/** The JSON object of a body; an empty body is an empty object. */
async function bodyInput(
  request: EngineRequest,
  limit: number,
  operation: Operation,
  signed: VerifiedRequest | null,
): Promise<Record<string, unknown>> {
  const type = request.headers['content-type'];
  const form = type !== undefined && FORM_TYPE.test(type);
  if (type !== undefined && !form && !JSON_TYPES.test(type)) {
    const mediaType = (type.split(';')[0] ?? '').trim().slice(0, 100);
    throw new ServiceError(
      'unsupported_media_type',
      `This route takes a JSON body, not \`${mediaType}\`: send it with ` +
        '`Content-Type: application/json`.',
    );
  }
  const bytes = checkedBytes(signed, await request.body(limit));
  if (bytes.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new ServiceError(
      'invalid_json',
      (form
        ? 'The body is form-encoded (what `curl -d` sends without a Content-Type), not JSON. '
        : 'The body is not valid JSON. ') +
        `Send one JSON object with \`Content-Type: application/json\`, e.g. ${exampleBody(operation)}.`,
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ServiceError('invalid_input', 'The body must be one JSON object.', {
      field: '(body)',
    });
  }
  return value as Record<string, unknown>;
}

const examples = new WeakMap<Operation, string>();

/**
 * A JSON body `operation` takes, for the words of a refusal: its required body fields (or,
 * when none is required, its first one) with a placeholder of each field's type. Path
 * parameters are left out: they travel in the path. Made on first use.
 */
function exampleBody(operation: Operation): string {
  let example = examples.get(operation);
  if (example !== undefined) return example;
  const schema = toJsonSchema(operation.input, 'input');
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  const inPath = new Set(pathParameters(operation.path));
  const fields = Object.keys(properties).filter((name) => !inPath.has(name));
  const shown = fields.some((name) => required.has(name))
    ? fields.filter((name) => required.has(name))
    : fields.slice(0, 1);
  const members = shown.map(
    (name) => `${JSON.stringify(name)}: ${JSON.stringify(placeholder(properties[name] ?? {}))}`,
  );
  example = `{${members.join(', ')}}`;
  examples.set(operation, example);
  return example;
}

/** A value of the type a JSON Schema describes: its first allowed value, or a stand-in. */
function placeholder(schema: JsonSchema): unknown {
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if ('const' in schema) return schema.const;
  switch (schema.type) {
    case 'integer':
    case 'number':
      // Every integer is bounded (protocol/json-schema.ts); a bound below 0 is no example.
      return typeof schema.minimum === 'number' && schema.minimum >= 0 ? schema.minimum : 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return {};
    default:
      return '...';
  }
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
  /** Writes whose answer can be kept for an Idempotency-Key (not byte replies). */
  idempotent: boolean;
  /** Where the fields travel, for refusals that name them; none when nothing is in the path. */
  places: InputPlaces | undefined;
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
    places: placesOf(operation, binding),
  };
  plans.set(operation, plan);
  return plan;
}

function placesOf(operation: Operation, binding: ResolvedBinding): InputPlaces | undefined {
  const inPath = pathParameters(operation.path);
  if (inPath.length === 0) return undefined;
  return { pathParameters: inPath, others: binding.body.kind === 'json' ? 'body' : 'query' };
}

export interface ServeOptions {
  /** The handler, when it is not the operation's entry in HANDLERS (test-only operations). */
  handler?: AnyHandler;
  /** Where failures of a byte source are logged (the answer is already under way). */
  log?: (error: unknown) => void;
  /** The caller's address (TRUSTED_PROXIES read): an anonymous Idempotency-Key is its own. */
  addressOf?: AddressOf;
}

/**
 * Serves one operation over HTTP as its binding says (protocol/binding.ts): path and query
 * in, plus a JSON body or a byte stream; JSON, markdown, HTML or bytes out, with the statuses and
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
  // The caller is checked before the body is read: a stranger's body is never read. A signed
  // request's signature is verified first (its body is checked against it as it is read).
  const token = bearerToken(request.headers);
  const signed =
    operation.auth === 'none' || request.headers['signature-input'] === undefined
      ? null
      : await verifySignedRequest(services, request);
  const principal = await authenticate(services, operation, token, signed?.proof);
  // Before any replay: an unsigned write of an agent that requires signatures is refused, never
  // answered from a signed request's kept answer (run() holds every other door so).
  if (principal?.signatureRequired) assertSignedWrite(operation);
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
    bodyKind === 'json'
      ? await bodyInput(request, plan.bodyLimit, operation, signed)
      : queryInput(request.query);
  // Refused here, before the handler runs, when the declared length is over the limit.
  const raw = bodyKind === 'bytes' ? request.stream(plan.bodyLimit) : undefined;
  const stream = raw && signed?.digest ? new DigestCheckedBody(raw, signed.digest) : raw;
  // A keyed byte write hashes its body on the way: its sha256 is part of its fingerprint.
  const body = stream && key !== undefined && plan.idempotent ? new HashedBody(stream) : stream;
  for (const name in params) {
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
  const caller =
    plan.plain && plan.places === undefined
      ? request
      : {
          get signal() {
            return request.signal;
          },
          places: plan.places,
          transport: plan.plain
            ? undefined
            : { body, headers: pickHeaders(request.headers, plan.requestHeaders), format },
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
  // Whose keys these are: a replay never crosses callers, nor a token's reach.
  const scope = idempotencyScope(principal, () => (options.addressOf ?? remote)(request));
  if (body instanceof HashedBody) {
    const headers = pickHeaders(request.headers, plan.requestHeaders);
    return runIdempotentBytes(
      services,
      {
        key,
        scope,
        body,
        fingerprint: (sha256) =>
          JSON.stringify([operation.method, operation.path, params, fields, headers, sha256]),
      },
      execute,
    );
  }
  return runIdempotent(
    services,
    {
      key,
      scope,
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

const remote: AddressOf = (peer) => peer.remoteAddress;

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
  const vary: Record<string, string> =
    kind === 'json_or_markdown' || kind === 'json_or_html' ? { vary: 'accept' } : {};
  if (isHtml(value)) {
    return {
      status,
      headers: { ...headers, ...vary, 'content-type': HTML_TYPE },
      body: value.text,
    };
  }
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
const HTML_TYPE = 'text/html; charset=utf-8';
