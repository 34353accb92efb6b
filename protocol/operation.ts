import type { z } from 'zod';
import type { ErrorCode } from './errors.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/**
 * Who may call: `agent` needs a valid token; `optional` takes one when sent (and refuses a bad
 * one); `none` ignores the caller.
 */
export type Auth = 'agent' | 'optional' | 'none';

/**
 * One operation, declared once. The HTTP route, the MCP tool, the email command and the
 * OpenAPI entry are all generated from this; no door is written by hand per operation.
 *
 * `input` is one flat object: path parameters, then the query (GET, DELETE) or the JSON body
 * (POST, PUT). It must be strict, so that unknown fields are refused rather than ignored.
 */
export interface Operation<
  I extends z.ZodObject = z.ZodObject,
  O extends z.ZodType = z.ZodType,
  A extends Auth = Auth,
> {
  /** The MCP tool name and the email subject. */
  name: string;
  method: HttpMethod;
  /** Express-style, e.g. `/agents/:agent_id/knock`. */
  path: string;
  auth: A;
  /** One line, for lists. */
  summary: string;
  /** Written for an agent: what it does, when to use it, what comes back, what can go wrong. */
  description: string;
  input: I;
  output: O;
  /** The HTTP status of success. */
  status: 200 | 201 | 202;
  /** Codes this operation answers besides the ones every operation may answer. */
  errors: readonly ErrorCode[];
  /** The largest body this route reads; larger ones are refused with 413 unread. */
  maxBodyBytes?: number;
  /** Also counted against the stricter per-address limit of sign-ups. */
  signUpLimited?: boolean;
  /** Operations only the operator agent may call (to everyone else they answer 404). */
  operatorOnly?: boolean;
  /** True for operations that only read: safe to retry, never take an Idempotency-Key. */
  readOnly?: boolean;
}

export function defineOperation<I extends z.ZodObject, O extends z.ZodType, A extends Auth>(
  operation: Operation<I, O, A>,
): Operation<I, O, A> {
  return operation;
}

/** Path parameters named in an Express-style path, in order. */
export function pathParameters(path: string): string[] {
  return [...path.matchAll(/:([a-z_]+)/g)].map((match) => match[1] as string);
}

/** Codes any operation may answer, by auth kind; listed once here rather than on each. */
export function commonErrors(operation: Operation): ErrorCode[] {
  const codes: ErrorCode[] = ['invalid_input', 'unknown_field', 'rate_limited', 'internal_error'];
  if (operation.method !== 'GET' && operation.method !== 'DELETE') {
    codes.push('invalid_json', 'payload_too_large');
  }
  if (operation.auth !== 'none') codes.push('unauthorized');
  return codes;
}
