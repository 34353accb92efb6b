import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  JSONRPCMessageSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  ReadResourceRequestSchema,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { ServiceError } from '../../protocol/errors.ts';
import { MAX_INPUT_DEPTH, nestingExceeds } from '../../protocol/input-guard.ts';
import type { EngineResponse } from '../http/engine.ts';

/**
 * The JSON-RPC layer the SDK's transport gets wrong for a stateless JSON server: it answers a
 * well-formed message that is not JSON-RPC with -32700 (parse error) instead of -32600, and a
 * request whose params do not fit its method with -32603 (internal error) instead of -32602.
 * The door decodes the body here first and hands the SDK only messages it can take.
 */

type Id = string | number | null;

/** An HTTP answer carrying one JSON-RPC error (no request to answer: `id` is usually null). */
export function rpcErrorResponse(
  status: number,
  code: number,
  message: string,
  options: { id?: Id; data?: unknown; headers?: Record<string, string> } = {},
): EngineResponse {
  return {
    status,
    headers: { 'content-type': 'application/json', ...options.headers },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: options.id ?? null,
      error: { code, message, ...(options.data === undefined ? {} : { data: options.data }) },
    }),
  };
}

export type DecodedBody =
  | { kind: 'messages'; body: JSONRPCMessage | JSONRPCMessage[] }
  /** Not declared as JSON: the SDK refuses it with its own 415. */
  | { kind: 'not-json' }
  | { kind: 'refused'; response: EngineResponse };

/** The most messages one POST may carry; each counts against the rate limits as a request. */
const MAX_BATCH_MESSAGES = 100;

/**
 * Levels around a tool's arguments in a body: the batch, the message, its params. Arguments
 * deeper than the input bound are refused by the operation's door (protocol/input-guard.ts);
 * a body deeper than both together is refused here, before the SDK reads any of it.
 */
const ENVELOPE_DEPTH = 3;

/**
 * The JSON-RPC message (or batch) of a POST body, or the error that answers it. Throws a
 * ServiceError (answered 400 with its problem) for a body no client means to send: nested past
 * any tool's arguments, or a batch of more than MAX_BATCH_MESSAGES.
 */
export function decodeBody(bytes: Buffer, contentType: string | undefined): DecodedBody {
  if (!isJsonContentType(contentType)) return { kind: 'not-json' };
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch {
    return {
      kind: 'refused',
      response: rpcErrorResponse(400, ErrorCode.ParseError, 'Parse error: the body is not JSON.'),
    };
  }
  if (nestingExceeds(value, MAX_INPUT_DEPTH + ENVELOPE_DEPTH)) {
    throw new ServiceError(
      'invalid_input',
      `The body nests objects and arrays deeper than a tool's arguments may (${MAX_INPUT_DEPTH} levels); send flatter arguments.`,
      { field: '(body)', max_depth: MAX_INPUT_DEPTH },
    );
  }
  if (Array.isArray(value) && value.length > MAX_BATCH_MESSAGES) {
    throw new ServiceError(
      'invalid_input',
      `A batch holds at most ${MAX_BATCH_MESSAGES} JSON-RPC messages; this one holds ${value.length}. Send the rest in further requests (each message counts against the rate limit either way).`,
      { field: '(body)', max_batch: MAX_BATCH_MESSAGES },
    );
  }
  if (Array.isArray(value) && value.length === 0) {
    return {
      kind: 'refused',
      response: rpcErrorResponse(
        400,
        ErrorCode.InvalidRequest,
        'Invalid Request: the batch is empty.',
      ),
    };
  }
  const items = Array.isArray(value) ? value : [value];
  const ids = new Set<unknown>();
  for (const item of items) {
    if (!JSONRPCMessageSchema.safeParse(item).success) {
      return {
        kind: 'refused',
        response: rpcErrorResponse(
          400,
          ErrorCode.InvalidRequest,
          'Invalid Request: a JSON-RPC 2.0 message needs "jsonrpc": "2.0" and a "method" (requests add an "id"; params, when sent, are an object).',
          { id: Array.isArray(value) ? null : idOf(item) },
        ),
      };
    }
    const id = (item as { id?: unknown }).id;
    if (id !== undefined && 'method' in (item as object)) {
      if (ids.has(id)) {
        return {
          kind: 'refused',
          response: rpcErrorResponse(
            400,
            ErrorCode.InvalidRequest,
            `Invalid Request: two requests of the batch have the id ${JSON.stringify(id)}; give each its own.`,
          ),
        };
      }
      ids.add(id);
    }
  }
  return { kind: 'messages', body: value as JSONRPCMessage | JSONRPCMessage[] };
}

/** The arguments of each tools/call request, as sent, by request id. */
export function toolArguments(
  body: JSONRPCMessage | JSONRPCMessage[],
): Map<unknown, Record<string, unknown>> {
  const found = new Map<unknown, Record<string, unknown>>();
  for (const message of Array.isArray(body) ? body : [body]) {
    if (!('method' in message) || message.method !== 'tools/call' || !('id' in message)) continue;
    const args = (message.params as { arguments?: unknown } | undefined)?.arguments;
    if (args !== null && typeof args === 'object' && !Array.isArray(args)) {
      found.set(message.id, args as Record<string, unknown>);
    }
  }
  return found;
}

/** The id of a message that failed to decode, when it has a usable one (JSON-RPC: else null). */
function idOf(item: unknown): Id {
  const id = (item as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** What each method the door serves takes; other methods are the SDK's -32601. */
const REQUEST_SCHEMAS: Record<string, z.ZodType> = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
  'resources/list': ListResourcesRequestSchema,
  'resources/templates/list': ListResourceTemplatesRequestSchema,
  'resources/read': ReadResourceRequestSchema,
};

/**
 * An error the SDK's server sends as a JSON-RPC error with this code and message. (Its own
 * McpError would put "MCP error -32602:" into the message, which the client then prefixes again.)
 */
export function protocolError(code: number, message: string, data?: unknown): Error {
  return Object.assign(new Error(message), { code, data });
}

/** The -32602 answer to a request whose params do not fit its method, or undefined. */
export function invalidParams(message: JSONRPCMessage): JSONRPCErrorResponse | undefined {
  if (!('method' in message) || !('id' in message)) return undefined;
  const schema = REQUEST_SCHEMAS[message.method];
  if (!schema) return undefined;
  const parsed = schema.safeParse(message);
  if (parsed.success) return undefined;
  const issues = parsed.error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.join('.') || '(message)'}: ${issue.message}`)
    .join('; ');
  return {
    jsonrpc: '2.0',
    id: message.id,
    error: {
      code: ErrorCode.InvalidParams,
      message: `Invalid params for ${message.method}: ${issues}`,
    },
  };
}

/**
 * The Accept header to hand the SDK. It insists on both `application/json` and
 * `text/event-stream`, yet this server only ever answers JSON: a client that accepts JSON (alone,
 * `application/*`, `*\/*`, or no Accept at all) is served; any other Accept is left for the SDK
 * to refuse with 406.
 */
export function acceptForSdk(accept: string | undefined): string | undefined {
  if (accept === undefined) return 'application/json, text/event-stream';
  const acceptsJson = accept.split(',').some((range) => {
    const [type = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const refused = params.some((param) => /^q=0(\.0{0,3})?$/.test(param.replace(/\s/g, '')));
    return !refused && (type === 'application/json' || type === 'application/*' || type === '*/*');
  });
  return acceptsJson ? 'application/json, text/event-stream' : accept;
}
