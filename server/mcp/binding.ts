import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import {
  bytesBody,
  isHtml,
  isMarkdown,
  isReply,
  type ByteBody,
  type ByteReply,
  type ResolvedBinding,
} from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';

/**
 * An operation's transport binding as MCP carries it (the contract is in protocol/binding.ts):
 * a byte body travels as the `content` (UTF-8 text) or `content_base64` argument, a byte reply
 * as text when it is UTF-8 and as an embedded resource otherwise, markdown as text.
 */

/**
 * The most bytes one MCP call carries either way (1 MiB). A tool call is one JSON message held
 * whole in memory and in the agent's context (base64 adds a third), so past this a byte body or
 * reply goes through a storage link (get_storage_link) or plain HTTP, which stream.
 */
export const MCP_MAX_CONTENT_BYTES = 1024 * 1024;

/** The arguments a byte body adds to a tool's input schema. */
export function bytesArguments(maxBytes: number): Record<string, Record<string, unknown>> {
  const limit = Math.min(maxBytes, MCP_MAX_CONTENT_BYTES);
  return {
    content: {
      type: 'string',
      description: `The body as UTF-8 text (at most ${limit} bytes). Send this or content_base64, not both.`,
    },
    content_base64: {
      type: 'string',
      contentEncoding: 'base64',
      description: `The body as standard base64, for bytes that are not UTF-8 text (at most ${limit} bytes decoded). Send this or content, not both.`,
    },
  };
}

/** How long the base64 of `bytes` bytes is: what a byte body may take on the wire. */
export function base64Length(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}

/** The arguments that carry an operation's byte body over MCP, if it takes one. */
export function byteBodyArguments(binding: ResolvedBinding): readonly string[] {
  return binding.body.kind === 'bytes' ? ['content', 'content_base64'] : [];
}

/**
 * Splits a call's arguments into the operation's input fields and, for a byte body, the body
 * the handler reads. Refuses a byte body sent twice, not at all, or larger than allowed.
 */
export function takeBody(
  binding: ResolvedBinding,
  args: Record<string, unknown>,
): { fields: Record<string, unknown>; body?: ByteBody } {
  if (binding.body.kind !== 'bytes') return { fields: args };
  const { content, content_base64: base64, ...fields } = args;
  if ((content === undefined) === (base64 === undefined)) {
    throw new ServiceError(
      'invalid_input',
      'Send the body as exactly one of `content` (UTF-8 text) or `content_base64` (base64).',
      { field: 'content' },
    );
  }
  let bytes: Buffer;
  if (content !== undefined) {
    if (typeof content !== 'string') throw notAString('content');
    bytes = Buffer.from(content, 'utf8');
  } else {
    if (typeof base64 !== 'string') throw notAString('content_base64');
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64) || base64.length % 4 !== 0) {
      throw new ServiceError('invalid_input', '`content_base64` is not standard base64.', {
        field: 'content_base64',
      });
    }
    bytes = Buffer.from(base64, 'base64');
  }
  const limit = Math.min(binding.body.maxBytes, MCP_MAX_CONTENT_BYTES);
  if (bytes.length > limit) {
    throw new ServiceError(
      'payload_too_large',
      limit < binding.body.maxBytes
        ? `The body is larger than an MCP call carries (${limit} bytes). Ask get_storage_link for a readwrite link with this path and PUT the bytes there (header x-ms-blob-type: BlockBlob; any size up to your quota), or send them over HTTP (up to ${binding.body.maxBytes} bytes).`
        : `The body is larger than this operation takes (${limit} bytes at most).`,
      { limit_bytes: limit },
    );
  }
  return { fields, body: bytesBody(bytes, binding.body.contentType) };
}

function notAString(field: string): ServiceError {
  return new ServiceError('invalid_input', `\`${field}\` must be a string.`, { field });
}

/** What structuredContent of a byte reply holds. */
const BYTE_REPLY_SCHEMA: Tool['outputSchema'] = {
  type: 'object',
  properties: {
    content_type: { type: 'string' },
    size: { type: 'integer', description: 'In bytes.' },
    etag: { type: 'string' },
    text: { type: 'string', description: 'The bytes, when they are UTF-8 text.' },
    content_base64: {
      type: 'string',
      contentEncoding: 'base64',
      description: 'The bytes, when they are not UTF-8 text.',
    },
  },
  required: ['content_type', 'size'],
};

/**
 * The tool's output schema for this binding, or undefined when its results carry no
 * structuredContent (markdown, or nothing to answer): a client holds a result to the schema
 * it was given, and refuses one without structuredContent when a schema was promised.
 */
export function outputSchemaFor(
  binding: ResolvedBinding,
  status: number,
  json: () => Tool['outputSchema'],
): Tool['outputSchema'] | undefined {
  if (status === 204) return undefined;
  switch (binding.reply.kind) {
    case 'markdown':
      return undefined;
    case 'bytes':
      return BYTE_REPLY_SCHEMA;
    default:
      return json();
  }
}

/** The tool result of a handler's answer; `resourceUri` names the bytes of a byte reply. */
export async function toolResult(
  binding: ResolvedBinding,
  answer: unknown,
  resourceUri: () => string,
): Promise<CallToolResult> {
  // A reply() carries its body; its HTTP status and headers go along in _meta.
  const meta = isReply(answer)
    ? { _meta: { http_status: answer.status, http_headers: { ...answer.headers } } }
    : {};
  const value = isReply(answer) ? answer.body : answer;
  // An answer with an error status (402 Payment Required, say) is no result of the tool's schema.
  if (isReply(answer) && answer.status >= 400) {
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(value) }], ...meta };
  }
  if (value === undefined) return { content: [], ...meta };
  if (isMarkdown(value) || isHtml(value)) {
    return { content: [{ type: 'text', text: value.text }], ...meta };
  }
  if (binding.reply.kind === 'bytes') {
    return { ...(await byteResult(value as ByteReply, resourceUri)), ...meta };
  }
  return {
    content: [{ type: 'text', text: JSON.stringify(value) }],
    structuredContent: value as Record<string, unknown>,
    ...meta,
  };
}

async function byteResult(reply: ByteReply, resourceUri: () => string): Promise<CallToolResult> {
  if (reply.size > MCP_MAX_CONTENT_BYTES) {
    throw new ServiceError(
      'payload_too_large',
      `These ${reply.size} bytes are more than an MCP answer carries (${MCP_MAX_CONTENT_BYTES}). Ask get_storage_link for a read link with this path and GET its file_url (byte ranges work), or read them over HTTP.`,
      { limit_bytes: MCP_MAX_CONTENT_BYTES, size: reply.size },
    );
  }
  const chunks: Uint8Array[] = [];
  let read = 0;
  for await (const chunk of reply.open()) {
    read += chunk.length;
    if (read > MCP_MAX_CONTENT_BYTES) throw new Error('a byte reply is longer than its size');
    chunks.push(chunk);
  }
  const bytes = Buffer.concat(chunks);
  const described = {
    content_type: reply.contentType,
    size: bytes.length,
    ...(reply.etag === undefined ? {} : { etag: reply.etag }),
  };
  const text = utf8(bytes);
  if (text !== undefined) {
    return { content: [{ type: 'text', text }], structuredContent: { ...described, text } };
  }
  const blob = bytes.toString('base64');
  return {
    content: [
      { type: 'resource', resource: { uri: resourceUri(), mimeType: reply.contentType, blob } },
    ],
    structuredContent: { ...described, content_base64: blob },
  };
}

/** The bytes as text when they are valid UTF-8, else undefined. */
function utf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** The HTTP address of the same operation with these fields: a byte reply's resource URI. */
export function operationUrl(baseUrl: string, path: string, fields: Record<string, unknown>) {
  return (
    baseUrl +
    path.replace(/([:*])([a-z_]+)/g, (_, kind: string, name: string) => {
      const value = String(fields[name] ?? '');
      return kind === '*'
        ? value.split('/').map(encodeURIComponent).join('/')
        : encodeURIComponent(value);
    })
  );
}
