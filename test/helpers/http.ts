import { assertDescribedAnswer } from './response-schemas.ts';
import type { TestServer } from './server.ts';
import type { Problem } from './wire-types.ts';

/** An answer of the service: its status, its JSON body (`{}` when empty) and its headers. */
export interface JsonAnswer<T> {
  status: number;
  body: T;
  headers: Headers;
}

/** How a request goes through the HTTP door. */
export interface RequestOptions {
  /** Sent as Bearer. */
  token?: string | null;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as it is, with no content type (a file's text). */
  text?: string;
  accept?: string;
}

/**
 * One request through the real HTTP door, as the options say; its status, its JSON body (a
 * refusal's problem members typed too) and its headers.
 */
export async function request<T = Record<string, unknown>>(
  server: TestServer,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<JsonAnswer<T & Partial<Problem>>> {
  const headers: Record<string, string> = {};
  if (options.accept) headers.accept = options.accept;
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined = options.text;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  const response = await fetch(server.url(path), {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  const parsed: unknown = text ? JSON.parse(text) : {};
  // Every answer read here is held to the description (./response-schemas.ts).
  if (text) {
    assertDescribedAnswer(
      method,
      path,
      response.status,
      response.headers.get('content-type'),
      parsed,
    );
  }
  return {
    status: response.status,
    body: parsed as T & Partial<Problem>,
    headers: response.headers,
  };
}

/** One request with the token as Bearer and `body` sent as it is; the response, unread. */
export function sendAs(
  server: TestServer,
  method: string,
  path: string,
  token: string,
  body?: string,
): Promise<Response> {
  return fetch(server.url(path), {
    method,
    headers: { authorization: `Bearer ${token}` },
    ...(body === undefined ? {} : { body }),
  });
}

/** One JSON request through the real HTTP door, with the token (when given) as Bearer. */
export function callJson<T = Record<string, unknown>>(
  server: TestServer,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
): Promise<JsonAnswer<T>> {
  return request<T>(server, method, path, { accept: 'application/json', token, body });
}
