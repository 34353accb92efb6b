import * as assert from 'uvu/assert';
import type { Json } from './wire-types.ts';

/**
 * What the reference documents promise, read the way a newcomer reads them: `/llms.txt`, then
 * every document it links on this service, then what those link (documents only, bounded).
 * From their text: the links they give, the routes they name (`METHOD /path` anywhere, and
 * every `curl` example), and the names their code shows (fields, values, codes). A call made
 * through `documentedCall` must use a route and fields the documents name, so a story told
 * through it proves the documents are enough.
 */

/** A route the documents name, with where they name it. */
export interface DocumentedRoute {
  method: string;
  /** As written, placeholders and all: `/workspaces/<workspace_id>/files/<path>`. */
  template: string;
  pattern: RegExp;
  document: string;
  /** Named in words or a table (`mention`), or only shown by a `curl` example. */
  kind: 'mention' | 'curl';
}

/** One `curl` example of a document, with the route it calls when the URL is on the service. */
export interface CurlExample {
  document: string;
  command: string;
  method: string;
  /** The path on the service (no query), or null for a URL elsewhere or a placeholder. */
  path: string | null;
}

/** One link a document gives, and what fetching it answered (null: not fetched). */
export interface DocumentLink {
  document: string;
  url: string;
  /** The document says right after it that it is planned: `<url> (planned)`. */
  planned: boolean;
  status: number | null;
}

export interface Documentation {
  origin: string;
  /** The text of every document read, by path. */
  texts: Map<string, string>;
  links: DocumentLink[];
  routes: DocumentedRoute[];
  curlExamples: CurlExample[];
  /** Every name written in the documents' code (spans and blocks). */
  names: Set<string>;
  /** The OpenAPI document, when one is linked. */
  openApi: { paths: Record<string, Record<string, unknown>> } | null;
}

/** At most this many URLs are fetched while following links. */
const MAX_FETCHES = 60;

/**
 * The changelog is history: a route named only there (perhaps since removed) is not a promise
 * about today. Its links are still followed and checked.
 */
const HISTORY = new Set(['/changelog']);

const METHODS = 'GET|POST|PUT|DELETE|PATCH|HEAD';

/** Reads `/llms.txt` on `baseUrl` and everything it links on the service, without a token. */
export async function readDocumentation(baseUrl: string): Promise<Documentation> {
  const origin = new URL(baseUrl).origin;
  const documentation: Documentation = {
    origin,
    texts: new Map(),
    links: [],
    routes: [],
    curlExamples: [],
    names: new Set(),
    openApi: null,
  };
  const answered = new Map<string, number>();
  const queue = ['/llms.txt'];
  while (queue.length > 0 && answered.size < MAX_FETCHES) {
    const path = queue.shift() as string;
    if (answered.has(path)) continue;
    const response = await fetch(origin + path);
    answered.set(path, response.status);
    const type = response.headers.get('content-type') ?? '';
    if (response.status !== 200) {
      await response.body?.cancel();
      continue;
    }
    if (/^text\/(markdown|plain)/.test(type)) {
      const text = await response.text();
      documentation.texts.set(path, text);
      for (const { url, planned } of linksIn(text)) {
        documentation.links.push({ document: path, url, planned, status: null });
        const target = new URL(url);
        if (target.origin === origin) queue.push(target.pathname);
      }
    } else if (type.startsWith('application/json') && path.endsWith('openapi.json')) {
      documentation.openApi = (await response.json()) as Documentation['openApi'];
    } else {
      await response.body?.cancel();
    }
  }
  for (const link of documentation.links) {
    const target = new URL(link.url);
    if (target.origin === origin) link.status = answered.get(target.pathname) ?? null;
  }
  for (const [path, text] of documentation.texts) {
    for (const name of namesInCode(text)) documentation.names.add(name);
    const examples = curlExamplesIn(path, text, origin);
    documentation.curlExamples.push(...examples);
    if (HISTORY.has(path)) continue;
    documentation.routes.push(...routesIn(path, text, origin));
    for (const example of examples) {
      if (example.path !== null) {
        documentation.routes.push(route(example.method, example.path, path, 'curl'));
      }
    }
  }
  return documentation;
}

/**
 * The links of a text: markdown links, and bare URLs in its prose (code spans and blocks hold
 * examples, not links). Trailing punctuation is the sentence's, not the URL's. A bare origin
 * ("the service at https://...") names the service, not a document, and is left out.
 */
export function linksIn(text: string): { url: string; planned: boolean }[] {
  const prose = text.replace(/```[\s\S]*?```/g, ' ').replace(/`[^`\n]*`/g, ' ');
  const found = new Map<string, boolean>();
  for (const match of prose.matchAll(/https?:\/\/[^\s<>()[\]"'`]+/g)) {
    const url = (match[0] as string).replace(/[.,;:!?]+$/, '');
    if (/^https?:\/\/[^/]+\/?$/.test(url)) continue;
    const after = prose.slice((match.index ?? 0) + url.length);
    found.set(url, (found.get(url) ?? false) || /^\)? ?\(planned\)/.test(after));
  }
  return [...found].map(([url, planned]) => ({ url, planned }));
}

/** Every `METHOD /path` a text names, in code or prose; a full URL counts when on `origin`. */
function routesIn(document: string, text: string, origin: string): DocumentedRoute[] {
  const routes: DocumentedRoute[] = [];
  // `-X POST <url>` is a curl example's, read with the examples.
  const mention = new RegExp(
    `(?<!-X +|--request +)\\b(${METHODS}) +((?:https?://[^\\s/\`'"]+)?/[^\\s\`'"),]*)`,
    'g',
  );
  for (const match of text.matchAll(mention)) {
    const path = onService(match[2] as string, origin);
    if (path !== null) routes.push(route(match[1] as string, path, document, 'mention'));
  }
  return routes;
}

/** The `curl` commands of a text (continued lines joined), with the route each calls. */
function curlExamplesIn(document: string, text: string, origin: string): CurlExample[] {
  const examples: CurlExample[] = [];
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  for (const line of lines) {
    const at = line.indexOf('curl ');
    if (at < 0) continue;
    const command = line.slice(at).replace(/`.*$/, '').trim();
    const method =
      /(?:-X|--request) +([A-Z]+)/.exec(command)?.[1] ??
      (/ (-I|--head)\b/.test(command)
        ? 'HEAD'
        : / (-d|--data|--data-binary|--data-raw|-F|--form) /.test(command)
          ? 'POST'
          : 'GET');
    const urls = [...command.matchAll(/https?:\/\/[^\s'"`]+/g)].map((m) => m[0]);
    if (urls.length === 0) examples.push({ document, command, method, path: null });
    for (const url of urls) {
      examples.push({ document, command, method, path: onService(url, origin) });
    }
  }
  return examples;
}

/** The path of `written` (a path or a URL) when it is on `origin`, without query or options. */
function onService(written: string, origin: string): string | null {
  let path = written;
  if (/^https?:\/\//.test(written)) {
    const host = /^https?:\/\/[^/?#]+/.exec(written)?.[0] as string;
    if (host !== origin) return null;
    path = written.slice(host.length) || '/';
  }
  return path.replace(/[[?#].*$/, '').replace(/\\/g, '') || '/';
}

/** A placeholder segment: `<workspace_id>`, `{id}`, `:id`, `*path`, `...`. */
const PLACEHOLDER = /^(<[^>]*>|\{[^}]*\}|:[A-Za-z_]+|\*[A-Za-z_]+|\.\.\.)$/;

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A route and the pattern of the paths it takes: a placeholder is one segment, but one named
 * `path` (a file's path) takes the rest; `a|b` in a segment is either.
 */
export function route(
  method: string,
  template: string,
  document: string,
  kind: DocumentedRoute['kind'],
): DocumentedRoute {
  const segments = template.split('/').map((segment) => {
    if (PLACEHOLDER.test(segment)) return /path/.test(segment) ? '.+' : '[^/]+';
    return segment.split('|').map(escape).join('|');
  });
  const body = segments.map((s) => (s.includes('|') ? `(?:${s})` : s)).join('/');
  return { method, template, pattern: new RegExp(`^${body}$`), document, kind };
}

/** Names written in code: identifiers inside code spans and blocks. */
function namesInCode(text: string): Set<string> {
  const names = new Set<string>();
  const code = [
    ...[...text.matchAll(/```[\s\S]*?```/g)].map((m) => m[0]),
    ...[...text.replace(/```[\s\S]*?```/g, ' ').matchAll(/`[^`\n]+`/g)].map((m) => m[0]),
  ];
  for (const piece of code) {
    for (const name of piece.matchAll(/[A-Za-z_][A-Za-z0-9_]*/g)) names.add(name[0]);
  }
  return names;
}

/**
 * The documented route `method` and `path` (no query) match, if any; `kinds` says which count
 * (a curl example documents the route it calls, except when the examples are what is checked).
 */
export function documentedRoute(
  documentation: Documentation,
  method: string,
  path: string,
  kinds: DocumentedRoute['kind'][] = ['mention', 'curl'],
): DocumentedRoute | undefined {
  return documentation.routes.find(
    (r) => kinds.includes(r.kind) && r.method === method && r.pattern.test(path),
  );
}

/** Whether the OpenAPI document describes `method` on `path`. */
export function inOpenApi(documentation: Documentation, method: string, path: string): boolean {
  const paths = documentation.openApi?.paths ?? {};
  return Object.entries(paths).some(
    ([template, operations]) =>
      method.toLowerCase() in operations &&
      route(method, template, '/openapi.json', 'mention').pattern.test(path),
  );
}

/** Asserts that the documents show `name` in their code (a field, a value, a code). */
export function assertDocumentedName(documentation: Documentation, name: string, where: string) {
  assert.ok(
    documentation.names.has(name),
    `${where}: \`${name}\` appears nowhere in /llms.txt or the documents it links`,
  );
}

/**
 * Reads `fields` of an answer's object, asserting that each is there and that the documents
 * name it: a story only relies on what it was promised.
 */
export function promised<K extends string>(
  documentation: Documentation,
  object: unknown,
  where: string,
  ...fields: K[]
): Record<K, unknown> {
  const record = object as Record<string, unknown>;
  for (const field of fields) {
    assertDocumentedName(documentation, field, where);
    assert.ok(
      record !== null && typeof record === 'object' && field in record,
      `${where}: the answer has no \`${field}\`: ${JSON.stringify(object)}`,
    );
  }
  return record as Record<K, unknown>;
}

export interface DocumentedRequest {
  /** Sent as Bearer. */
  token?: string;
  /** Sent as JSON; each top-level field must be named in the documents. */
  json?: Json;
  /** Sent as it is (a file's bytes). */
  bytes?: string;
  accept?: string;
}

export interface DocumentedAnswer<T> {
  status: number;
  headers: Headers;
  /** The parsed JSON, or the text when the answer is not JSON. */
  body: T;
}

/**
 * One request through the HTTP door, made only after asserting that the documents name its
 * route (and, when one is linked, that the OpenAPI document describes it) and every field it
 * sends, body and query alike.
 */
export async function documentedCall<T = Record<string, unknown>>(
  documentation: Documentation,
  method: string,
  pathAndQuery: string,
  request: DocumentedRequest = {},
): Promise<DocumentedAnswer<T>> {
  const url = new URL(pathAndQuery, documentation.origin);
  const where = `${method} ${url.pathname}`;
  assert.ok(
    documentedRoute(documentation, method, url.pathname),
    `${where} is not documented in /llms.txt or the documents it links`,
  );
  if (documentation.openApi) {
    assert.ok(inOpenApi(documentation, method, url.pathname), `${where} is not in /openapi.json`);
  }
  for (const field of url.searchParams.keys()) assertDocumentedName(documentation, field, where);
  for (const field of Object.keys(request.json ?? {})) {
    assertDocumentedName(documentation, field, where);
  }
  const headers: Record<string, string> = {};
  if (request.token) headers.authorization = `Bearer ${request.token}`;
  if (request.accept) headers.accept = request.accept;
  let body: string | undefined = request.bytes;
  if (request.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(request.json);
  }
  const response = await fetch(url, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await response.text();
  const json = /json/.test(response.headers.get('content-type') ?? '');
  return {
    status: response.status,
    headers: response.headers,
    body: (json && text ? JSON.parse(text) : text) as T,
  };
}
