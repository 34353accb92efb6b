import { parseDocument } from 'yaml';
import type { Principal } from '../../actors/kernel/principal.ts';
import type { Services } from '../../actors/kernel/services.ts';
import {
  bytesBody,
  isHtml,
  isMarkdown,
  isReply,
  resolveBinding,
  type ByteBody,
  type ByteReply,
} from '../../protocol/binding.ts';
import { ServiceError, toProblem } from '../../protocol/errors.ts';
import { MAX_INPUT_DEPTH, refuseHostileShape } from '../../protocol/input-guard.ts';
import { expansionProblem, type ExpansionBounds } from '../../protocol/yaml-expansion.ts';
import { jsonBodyLimit, restParameter, type Operation } from '../../protocol/operation.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { asServiceError } from '../http/problem.ts';
import { run } from '../invoke.ts';
import { MAX_ANSWER_ATTACHMENT_BYTES } from './answers.ts';
import type { InboundMail } from './inbound.ts';

/** Aliases one body may expand (a "billion laughs" body is refused, not expanded). */
const MAX_ALIASES = 50;

/** A body may become at most four times its own bytes as JSON (plus 256 KiB), aliases resolved. */
const commandBodyBounds = (text: string): ExpansionBounds => ({
  subject: 'The body',
  reader: 'the mail door reads',
  depth: MAX_INPUT_DEPTH,
  anchors: MAX_ALIASES,
  aliases: MAX_ALIASES,
  tags: MAX_ALIASES,
  values: 100_000 + text.length,
  bytes: 256 * 1024 + 4 * Buffer.byteLength(text, 'utf8'),
});

/**
 * The body of a command: YAML (the core schema, no custom tags) holding one mapping, or nothing
 * (`{}`). Anything else is `invalid_yaml`.
 */
export function parseCommandBody(text: string): Record<string, unknown> {
  const document = parseDocument(text, { schema: 'core', uniqueKeys: true, customTags: [] });
  const problem = document.errors[0];
  if (problem) {
    throw new ServiceError('invalid_yaml', `The body is not valid YAML: ${problem.message}`);
  }
  // Aliases bounded by what they repeat, before toJS builds it (protocol/yaml-expansion.ts).
  const tooLarge = expansionProblem(document.contents, commandBodyBounds(text));
  if (tooLarge) throw new ServiceError('invalid_yaml', tooLarge);
  let value: unknown;
  try {
    value = document.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (error) {
    throw new ServiceError('invalid_yaml', `The body is not valid YAML: ${String(error)}`);
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value) || value instanceof Date) {
    throw new ServiceError(
      'invalid_yaml',
      'The body must be a YAML mapping of the command input (`key: value` lines), or empty.',
    );
  }
  return value as Record<string, unknown>;
}

/** The commands a caller may send: every operation of the table it may call. */
export function commandFor(name: string, principal: Principal): Operation | undefined {
  return OPERATION_LIST.find(
    (operation) =>
      operation.name === name && (operation.operatorOnly !== true || principal.isOperator),
  );
}

/** The list a `help` (or an unknown command) answers. */
export function commandList(services: Services, principal: Principal): string {
  const lines = OPERATION_LIST.filter(
    (operation) => operation.operatorOnly !== true || principal.isOperator,
  ).map((operation) => `${operation.name}${heldNote(operation)}: ${operation.summary}`);
  return [
    'Subject = command, body = YAML of its input. Each command and its fields:',
    `${services.config.baseUrl}/mailgate/protocol`,
    '',
    ...lines,
    '',
  ].join('\n');
}

/** When a command waits for a confirmation by reply (server/email/mailgate.ts, holdReason). */
function heldNote(operation: Operation): string {
  if (operation.binds === true) return ' (always confirmed by reply)';
  return operation.readOnly === true ? '' : ' (confirmed by reply unless your mail passes DMARC)';
}

/** The decoded fields and byte bodies (one per attachment) of a command, checked as MCP does. */
export function commandCalls(
  operation: Operation,
  fields: Record<string, unknown>,
  attachments: InboundMail['attachments'],
): { fields: Record<string, unknown>; body?: ByteBody }[] {
  refuseHostileShape(fields, { pathField: restParameter(operation.path) });
  if (Buffer.byteLength(JSON.stringify(fields)) > jsonBodyLimit(operation)) {
    throw new ServiceError(
      'payload_too_large',
      `The body of ${operation.name} is larger than it takes (${jsonBodyLimit(operation)} bytes of JSON at most).`,
      { limit_bytes: jsonBodyLimit(operation) },
    );
  }
  const body = resolveBinding(operation.method, operation.binding).body;
  if (body.kind !== 'bytes') return [{ fields }];
  const rest = restParameter(operation.path);
  if (attachments.length === 0) {
    throw new ServiceError('invalid_input', `Attach the bytes ${operation.name} takes.`, {
      field: 'attachment',
    });
  }
  return attachments.map((attachment) => {
    if (attachment.content.length > body.maxBytes) {
      throw new ServiceError('payload_too_large', `${attachment.filename} is too large.`, {
        limit_bytes: body.maxBytes,
      });
    }
    const named = rest === undefined ? undefined : fields[rest];
    const path =
      rest === undefined
        ? undefined
        : typeof named === 'string' && named !== ''
          ? attachments.length === 1
            ? named
            : `${named.replace(/\/+$/, '')}/${attachment.filename}`
          : attachment.filename;
    return {
      fields: rest === undefined ? fields : { ...fields, [rest]: path },
      body: bytesBody(attachment.content, attachment.contentType),
    };
  });
}

/** One command's outcome as an answer carries it: YAML-able value, and bytes to attach. */
export interface CommandAnswer {
  value: unknown;
  attachment?: { filename: string; content: Uint8Array; contentType: string };
}

/** Runs one call of a command as `principal`; a refusal is its problem object. */
export async function runCommand(
  services: Services,
  operation: Operation,
  principal: Principal,
  call: { fields: Record<string, unknown>; body?: ByteBody },
  log: (message: string) => void,
): Promise<CommandAnswer> {
  try {
    const result = await run(services, operation, principal, call.fields, {
      signal: new AbortController().signal,
      transport: { body: call.body, format: 'json', headers: {} },
      places: { pathParameters: [], others: 'arguments' },
    });
    const value = isReply(result) ? result.body : result;
    if (isMarkdown(value) || isHtml(value)) return { value: value.text };
    if (resolveBinding(operation.method, operation.binding).reply.kind === 'bytes') {
      return attached(value as ByteReply, call.fields);
    }
    return { value: value ?? { done: true } };
  } catch (error) {
    return { value: problemOf(services, error, log) };
  }
}

export function problemOf(services: Services, error: unknown, log: (message: string) => void) {
  return toProblem(
    asServiceError(error, (e) => log(`mail: command failed: ${String(e)}`)),
    services.config.baseUrl,
  );
}

async function attached(reply: ByteReply, fields: Record<string, unknown>): Promise<CommandAnswer> {
  if (reply.size > MAX_ANSWER_ATTACHMENT_BYTES) {
    throw new ServiceError(
      'payload_too_large',
      `These ${reply.size} bytes are more than an answer attaches (${MAX_ANSWER_ATTACHMENT_BYTES}); ask get_storage_link for a read link.`,
      { limit_bytes: MAX_ANSWER_ATTACHMENT_BYTES },
    );
  }
  const chunks: Uint8Array[] = [];
  for await (const chunk of reply.open()) chunks.push(chunk);
  const path = typeof fields.path === 'string' ? fields.path : 'file';
  const filename = path.split('/').pop() || 'file';
  return {
    value: { attached: filename, content_type: reply.contentType, size: reply.size },
    attachment: { filename, content: Buffer.concat(chunks), contentType: reply.contentType },
  };
}
