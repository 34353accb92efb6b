import type { z } from 'zod';
import { resolveBinding, type Binding } from './binding.ts';
import type { ErrorCode } from './errors.ts';

type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/**
 * Who may call: `agent` needs a valid token; `optional` takes one when sent (and refuses a bad
 * one); `none` ignores the caller.
 */
export type Auth = 'agent' | 'optional' | 'none';

/** The scopes a token may carry (actors/kernel/token-scope.ts holds a token to them). */
export const READ_SCOPE = 'read';
/** `workspace:<workspace_id>`: that one workspace only. */
export const WORKSPACE_SCOPE_PREFIX = 'workspace:';

/**
 * One operation, declared once. The HTTP route, the MCP tool, the email command and the
 * OpenAPI entry are all generated from this; no door is written by hand per operation.
 *
 * `input` is one flat object: path parameters, then the JSON body (a `json` body) or the
 * query (every other body kind: GET and DELETE by default). It must be strict, so that unknown
 * fields are refused rather than ignored.
 */
export interface Operation<
  I extends z.ZodObject = z.ZodObject,
  O extends z.ZodType = z.ZodType,
  A extends Auth = Auth,
  B extends Binding = Binding,
> {
  /** The MCP tool name and the email subject. */
  name: string;
  method: HttpMethod;
  /**
   * Express-style, e.g. `/agents/:agent_id/knock`. A last segment `*name` is a rest parameter
   * taking one or more segments (`/workspaces/:workspace_id/files/*path`): the handler gets
   * them decoded (`%2F` as `/`) and checked by parseFilePath; a path that breaks a rule
   * (NUL, empty, `.` or `..` segments, look-alike separators...) is refused with 400 `invalid_path`.
   */
  path: string;
  auth: A;
  /** One line, for lists. */
  summary: string;
  /** Written for an agent: what it does, when to use it, what comes back, what can go wrong. */
  description: string;
  input: I;
  output: O;
  /** The HTTP status of success. */
  status: 200 | 201 | 202 | 204;
  /** Codes this operation answers besides the ones every operation may answer. */
  errors: readonly ErrorCode[];
  /** The largest JSON body this route reads; larger ones are refused with 413 unread. */
  maxBodyBytes?: number;
  /** How it travels when it is not JSON in and out: byte streams, markdown, statuses, headers. */
  binding?: B;
  /**
   * For the documentation (OpenAPI) only: every content type a `bytes` reply may be sent with
   * (media types, no parameters), when it is not always the binding's `contentType`.
   */
  replyContentTypes?: readonly string[];
  /** Also counted against the stricter per-address limit of sign-ups. */
  signUpLimited?: boolean;
  /** Operations only the operator agent may call (to everyone else they answer 404). */
  operatorOnly?: boolean;
  /**
   * How a restricted token (scopes `read`, `workspace:<id>`; actors/kernel/token-scope.ts) is
   * held to its scopes. Unset: a write needs `write`; an input naming `workspace_id` needs that
   * workspace, and one naming none needs `account` (the agent's whole reach). `any-workspace`:
   * it touches no one workspace (whoami, the feed, public reads): only `write` is checked.
   * `handler`: the handler checks (the token operations themselves).
   */
  tokenScope?: 'any-workspace' | 'handler';
  /**
   * `handler`: a `read` token is let through an operation that is not `readOnly`, and the
   * handler keeps it from writing: the feed (reading moves only the token's own place),
   * `get_storage_link` (a POST that writes only with `access: readwrite`). The workspace is
   * still held by `tokenScope`.
   */
  readScope?: 'handler';
  /** True for operations that only read: safe to retry, never take an Idempotency-Key. */
  readOnly?: boolean;
  /**
   * Its answer holds a secret made for this call (an API token, an invite token, a signed
   * link). Such an operation refuses an `Idempotency-Key`: a replay would hand the secret to
   * whoever sends the same key and body again, and the replay store would have to keep it.
   */
  mintsSecret?: boolean;
  /**
   * It commits its caller to something another agent relies on (agreeing, delivering, rating,
   * asking for money), or changes how the agent proves itself (its signing keys, its signature
   * policy). The email door never runs it from one message: it answers with a confirmation
   * request, and the reply to that carries it out, once (server/email/).
   */
  binds?: boolean;
}

/** The largest JSON body an operation takes when it declares no `maxBodyBytes`. */
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;

/** The largest JSON body (HTTP) or JSON arguments (MCP) `operation` takes. */
export function jsonBodyLimit(operation: Operation): number {
  return operation.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
}

export function defineOperation<
  I extends z.ZodObject,
  O extends z.ZodType,
  A extends Auth,
  const B extends Binding = Record<never, never>,
>(operation: Operation<I, O, A, B>): Operation<I, O, A, B> {
  return operation;
}

/** Path parameters named in an Express-style path, in order (a rest parameter last). */
export function pathParameters(path: string): string[] {
  return [...path.matchAll(/[:*]([a-z_]+)/g)].map((match) => match[1] as string);
}

/** The name of the path's rest parameter (`*name`, always the last segment), if it has one. */
export function restParameter(path: string): string | undefined {
  return /\/\*([a-z_]+)$/.exec(path)?.[1];
}

/**
 * An `Idempotency-Key` the HTTP door takes: 1 to 255 printable ASCII characters, no space. One
 * declaration for the check (server/http/idempotency.ts) and the description (OpenAPI's `pattern`).
 */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * Whether the HTTP door runs the operation at most once per `Idempotency-Key`: `POST` and `PUT`
 * writes whose answer is kept (not a byte reply). A byte body counts by its sha256, known once
 * it has streamed (`write_file`). `DELETE` takes none: a repeat answers 404. One that mints a
 * secret refuses the header (`invalid_input`) rather than keep its answer; see
 * server/http/idempotency.ts.
 */
export function takesIdempotencyKey(operation: Operation): boolean {
  const binding = resolveBinding(operation.method, operation.binding);
  return (
    (operation.method === 'POST' || operation.method === 'PUT') &&
    operation.readOnly !== true &&
    operation.mintsSecret !== true &&
    binding.reply.kind !== 'bytes'
  );
}

/**
 * Codes any operation may answer whatever its handler does, listed once here, not on each:
 * those of the doors (server/) and of the actor kernel (actors/kernel/), by auth kind, binding
 * and flags. OpenAPI lists them with the operation's own; servers started with `strictProtocol`
 * answer 500 when a handler throws a code in neither list (server/invoke.ts).
 */
export function commonErrors(operation: Operation): ErrorCode[] {
  const codes: ErrorCode[] = [
    // Decoding the input (server/invoke.ts), for every door.
    'invalid_input',
    'unknown_field',
    // The per-address limits (server/http/rate-limit.ts) and failures on the service's side.
    'rate_limited',
    'internal_error',
    // Starting or stopping (server/app.ts); the database out of reach (any statement).
    'service_unavailable',
    'storage_unavailable',
    // A full disk (database or file store); a connection lost during COMMIT.
    'storage_full',
    'outcome_unknown',
    // A malformed `Authorization` header is refused whatever the auth kind, before it is read.
    'unauthorized',
    // A body past its limit; over MCP, arguments past the operation's JSON limit (any tool).
    'payload_too_large',
  ];
  // A restricted token used beyond its scopes (server/invoke.ts, actors/kernel/token-scope.ts).
  if (operation.auth !== 'none') codes.push('token_scope');
  // A signed request whose signature does not hold (server/http/signed-request.ts); an unsigned
  // write of an agent that requires signatures (server/invoke.ts).
  if (operation.auth !== 'none') codes.push('invalid_signature', 'signature_required');
  const binding = resolveBinding(operation.method, operation.binding);
  if (binding.body.kind === 'json') codes.push('invalid_json', 'unsupported_media_type');
  if (binding.reply.kind === 'json_or_markdown') codes.push('not_acceptable');
  if (binding.reply.kind === 'bytes') codes.push('range_not_satisfiable');
  if (restParameter(operation.path) !== undefined) codes.push('invalid_path');
  // The kernel's paging (actors/kernel/page.ts) refuses a cursor it did not issue.
  if ('cursor' in operation.input.shape) codes.push('invalid_cursor');
  // A write that loses the race for an actor again and again (actors/kernel/registry.ts).
  if (operation.readOnly !== true) codes.push('conflict');
  if (takesIdempotencyKey(operation)) {
    codes.push('idempotency_key_in_use', 'idempotency_key_reused');
  }
  return codes;
}
