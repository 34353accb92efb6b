import type { TestServer } from './server.ts';

/** An answer of the service: its status, its JSON body (`{}` when empty) and its headers. */
export interface JsonAnswer<T> {
  status: number;
  body: T;
  headers: Headers;
}

/** One JSON request through the real HTTP door, with the token (when given) as Bearer. */
export async function callJson<T = Record<string, unknown>>(
  server: TestServer,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
): Promise<JsonAnswer<T>> {
  const response = await fetch(server.url(path), {
    method,
    headers: {
      accept: 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: (text ? JSON.parse(text) : {}) as T,
    headers: response.headers,
  };
}
