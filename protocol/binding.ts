import type { z } from 'zod';

/**
 * An operation's transport binding: what its request carries besides the path and the query,
 * what it answers, which statuses and headers it may set, and which request headers its
 * handler sees. The doors read it; handlers see only the plain types below.
 *
 * Over HTTP (server/http/):
 * - body `json`: one JSON object (`Content-Type: application/json`), at most the operation's
 *   `maxBodyBytes`. Its members are input fields.
 * - body `bytes`: the raw request body, streamed. The handler gets it as `call.body`, a
 *   ByteBody that pulls: a handler that reads slowly slows the client (the engine stops reading
 *   the socket). The body is refused with 413 `payload_too_large` once it declares or reaches
 *   more than `maxBytes`, before more is read; the iterator then throws that error, as it
 *   throws when the client goes away. Input fields come from the path and the query.
 * - body `none`: nothing; input fields come from the path and the query. A body sent anyway is
 *   not read (the connection closes after the answer).
 * - reply `json`: `application/json`. `markdown`: `text/markdown; charset=utf-8`, the handler
 *   returns `markdown(text)`. `json_or_markdown`: chosen by `Accept` (the door tells the
 *   handler in `call.format`; `prefer` names the choice when the client states none; 406
 *   `not_acceptable` when it accepts neither). `json_or_html`: JSON, or an HTML page the handler
 *   returns as `html(text)` (`text/html; charset=utf-8`); the handler chooses, from the request
 *   headers its binding declares (`accept`, say), since the choice may rest on more than
 *   `Accept`; both answers carry `Vary: Accept`. `bytes`: the handler returns a ByteReply and
 *   the door answers `Content-Length`, `Accept-Ranges: bytes`, `ETag`, `Last-Modified`,
 *   `If-None-Match` and `If-Modified-Since` -> 304, `If-Unmodified-Since` -> 412,
 *   a single `Range` -> 206 (or 416), and HEAD for the GET route, streaming with backpressure.
 * - A handler answers another declared status, or declared headers, by returning
 *   `reply(status, body, headers)`; errors stay `ServiceError`s (which may carry headers too).
 *
 * Over MCP (server/mcp, another door; this is the contract it implements):
 * - body `bytes`: the tool's input takes, besides the operation's input fields, exactly one
 *   of `content` (the bytes as UTF-8 text) or `content_base64` (standard base64), and the door
 *   hands the handler `bytesBody(decoded, contentType)`; more than `maxBytes` decoded bytes
 *   is `payload_too_large`, as over HTTP.
 * - reply `bytes`: the door reads `open()` whole (at most a limit of its own) and answers one
 *   `text` content item when the bytes are valid UTF-8, else one `resource` item whose `blob`
 *   is the base64 of the bytes, with `mimeType`; `structuredContent` is
 *   `{content_type, size, etag, text}` or `{content_type, size, etag, content_base64}`.
 * - reply `markdown`: one `text` content item holding the markdown (no structuredContent).
 *   `json_or_markdown`: JSON (`call.format` is `json`), as for `json` replies. `json_or_html`:
 *   JSON (the handler sees no headers, so it has nothing to choose the page by).
 * - a `reply()` with an error status (400 and up, e.g. 402): an error result (`isError`) whose
 *   text is the body's JSON, with the status and headers in `_meta`.
 * - `reply(status, body, headers)`: the body is the result; status and headers are HTTP's
 *   (an MCP door may copy them into the result's `_meta`). A body-less reply is an empty
 *   result.
 * - request headers: MCP has none; `call.headers` is empty there.
 */
export interface Binding {
  /** Default: `json` for POST and PUT, `none` for GET and DELETE. */
  body?: BodyBinding;
  /** Default: `json`. */
  reply?: ReplyBinding;
  /**
   * Answers the handler may give with `reply()` besides the operation's `status`, e.g. 200 for
   * an overwrite where a create is 201, 204, or 304 for a conditional request. (A byte reply's
   * 206, 304 and 416 are the door's own and need no declaring.) Errors are not listed here:
   * they are `ServiceError` codes in the operation's `errors`.
   */
  statuses?: readonly DeclaredStatus[];
  /** Response headers a handler may set with `reply()`, lower-case name -> what it means. */
  replyHeaders?: Readonly<Record<string, string>>;
  /**
   * Request headers the handler sees in `call.headers`, lower-case name -> what it means. A
   * handler sees these and no others (never `authorization`).
   */
  requestHeaders?: Readonly<Record<string, string>>;
}

type BodyBinding =
  | { kind: 'json' }
  | {
      kind: 'bytes';
      /** The largest body taken; more is refused with 413 before it is read. */
      maxBytes: number;
      /** For the documentation only; any content type is taken. */
      contentType?: string;
    }
  | { kind: 'none' };

type ReplyBinding =
  | { kind: 'json' }
  | { kind: 'markdown' }
  | { kind: 'json_or_markdown'; prefer?: 'json' | 'markdown' }
  | { kind: 'json_or_html' }
  | { kind: 'bytes'; contentType?: string };

interface DeclaredStatus {
  status: number;
  description: string;
  /**
   * The JSON body's schema when it is not the operation's `output`. 204 and 304 have no body
   * whatever this says.
   */
  schema?: z.ZodType;
}

// ---------------------------------------------------------------------------------------------
// What handlers see and return.

/**
 * A request body of a `bytes` operation: iterate it once, with `for await`. Each step pulls
 * the next chunk from the client; the iteration ends at the end of the body and throws (a
 * ServiceError `payload_too_large`, or an Error when the client went away) when the body
 * cannot be taken. A handler that stops early (break, throw) lets the door drop the rest.
 */
export interface ByteBody extends AsyncIterable<Uint8Array> {
  /** The length the client declared (`Content-Length`), or null when it declared none. */
  readonly declaredLength: number | null;
  /** The request's `Content-Type`, when sent. */
  readonly contentType: string | undefined;
}

/** An inclusive byte range, as HTTP counts it: `{start: 0, end: 9}` is the first 10 bytes. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * What a handler of a `bytes` reply returns: a description of the bytes and a way to read
 * them. The door answers conditional and ranged requests from this without calling `open` at
 * all where no bytes are sent (HEAD, 304, 416).
 */
export interface ByteReply {
  contentType: string;
  /** Total size in bytes. */
  size: number;
  /** A strong validator, unquoted (e.g. the sha256 in hex); the door sends it as `"etag"`. */
  etag?: string;
  /**
   * When these bytes were saved: the door sends `Last-Modified` and judges `If-Modified-Since`
   * and `If-Unmodified-Since` by it (protocol/conditional-dates.ts).
   */
  lastModified?: Date;
  /**
   * The bytes, or the bytes of `range` (never out of bounds), in chunks: exactly `size` bytes
   * (or `end - start + 1`). The door stops iterating (calls `return`) when the client goes
   * away, so open resources are released in a `finally`.
   */
  open(range?: ByteRange): AsyncIterable<Uint8Array>;
}

const REPLY = Symbol.for('agent-service.reply');
const MARKDOWN = Symbol.for('agent-service.markdown');
const HTML = Symbol.for('agent-service.html');

/** An answer with a status or headers of its own; see `reply()`. */
export interface Reply<B = unknown> {
  readonly [REPLY]: true;
  readonly status: number;
  /** Undefined for 204, 304 or other body-less answers. */
  readonly body: B | undefined;
  /** Lower-case names, each declared in the binding's `replyHeaders`. */
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Answers `status` (the operation's own, or one its binding declares) with `body` (what the
 * reply kind takes: the JSON value, `markdown()`, a ByteReply) and `headers` (declared ones).
 */
export function reply<B>(status: number, body?: B, headers: Record<string, string> = {}): Reply<B> {
  return { [REPLY]: true, status, body, headers };
}

export function isReply(value: unknown): value is Reply {
  return typeof value === 'object' && value !== null && REPLY in value;
}

/** Markdown text, as a `markdown` or `json_or_markdown` operation answers it. */
export interface Markdown {
  readonly [MARKDOWN]: true;
  readonly text: string;
}

export function markdown(text: string): Markdown {
  return { [MARKDOWN]: true, text };
}

export function isMarkdown(value: unknown): value is Markdown {
  return typeof value === 'object' && value !== null && MARKDOWN in value;
}

/** An HTML document, as a `json_or_html` operation answers it. */
export interface Html {
  readonly [HTML]: true;
  readonly text: string;
}

export function html(text: string): Html {
  return { [HTML]: true, text };
}

export function isHtml(value: unknown): value is Html {
  return typeof value === 'object' && value !== null && HTML in value;
}

/** A ByteBody over bytes already in memory (the MCP door's `content`, tests). */
export function bytesBody(bytes: Uint8Array, contentType?: string): ByteBody {
  return {
    declaredLength: bytes.length,
    contentType,
    async *[Symbol.asyncIterator]() {
      if (bytes.length > 0) yield bytes;
    },
  };
}

/** A ByteReply over bytes already in memory. */
export function bytesReply(bytes: Uint8Array, contentType: string, etag?: string): ByteReply {
  return {
    contentType,
    size: bytes.length,
    ...(etag === undefined ? {} : { etag }),
    async *open(range?: ByteRange) {
      const part = range ? bytes.subarray(range.start, range.end + 1) : bytes;
      if (part.length > 0) yield part;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Types the handler table derives from an operation's binding (actors/kernel/handler.ts).

/**
 * What a handler's `call` has besides the caller, by its binding (the door always passes all
 * three; the types show each only where the binding gives it a meaning):
 * - `body`: a `bytes` body;
 * - `headers`: the request headers the binding declares (lower-case names) that the caller
 *   sent, and no others; empty where a door has no headers (MCP);
 * - `format`: for `json_or_markdown` replies, the representation the caller accepts.
 */
export type BindingCall<B> = ([NonNullable<B>] extends [{ body: { kind: 'bytes' } }]
  ? { body: ByteBody }
  : unknown) &
  ([NonNullable<B>] extends [{ requestHeaders: object }]
    ? { headers: Readonly<Record<string, string>> }
    : unknown) &
  ([NonNullable<B>] extends [{ reply: { kind: 'json_or_markdown' } }]
    ? { format: 'json' | 'markdown' }
    : unknown);

/** What the door passes a handler besides the caller (see BindingCall). */
export interface CallTransport {
  body: ByteBody | undefined;
  headers: Readonly<Record<string, string>>;
  format: 'json' | 'markdown';
}

/** What a handler of this binding and output returns (its reply body), before `reply()`. */
export type ReplyBody<B, Output> = [NonNullable<B>] extends [{ reply: { kind: 'bytes' } }]
  ? ByteReply
  : [NonNullable<B>] extends [{ reply: { kind: 'markdown' } }]
    ? Markdown
    : [NonNullable<B>] extends [{ reply: { kind: 'json_or_markdown' } }]
      ? Output | Markdown
      : [NonNullable<B>] extends [{ reply: { kind: 'json_or_html' } }]
        ? Output | Html
        : Output;

/**
 * A handler's result: its reply body, or, where the binding declares statuses or headers, that
 * body with a status and headers of its own (`reply()`).
 */
export type HandlerResult<B, Output> = [NonNullable<B>] extends [
  { statuses: object } | { replyHeaders: object },
]
  ? ReplyBody<B, Output> | Reply<ReplyBody<B, Output>>
  : ReplyBody<B, Output>;

/** The binding with every default filled in, for the doors. */
export interface ResolvedBinding {
  body: BodyBinding;
  reply: ReplyBinding;
  statuses: readonly DeclaredStatus[];
  replyHeaders: Readonly<Record<string, string>>;
  requestHeaders: Readonly<Record<string, string>>;
}

export function resolveBinding(method: string, binding: Binding | undefined): ResolvedBinding {
  const takesBody = method === 'POST' || method === 'PUT';
  return {
    body: binding?.body ?? (takesBody ? { kind: 'json' } : { kind: 'none' }),
    reply: binding?.reply ?? { kind: 'json' },
    statuses: binding?.statuses ?? [],
    replyHeaders: binding?.replyHeaders ?? {},
    requestHeaders: binding?.requestHeaders ?? {},
  };
}

/** Statuses whose answers never carry a body (RFC 9110). */
export function isBodyless(status: number): boolean {
  return status === 204 || status === 304 || (status >= 100 && status < 200);
}
