import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { suite } from 'uvu';
import { removeTestBlobs } from '../../server/http/test-operations.ts';
import { startTestServer, type TestServer } from './server.ts';

/**
 * Requests as the transport suites send them, byte for byte where it matters, to the test-only
 * operations of server/http/test-operations.ts; and the suite that serves those operations.
 */

/** A suite over one server with the test-only operations, on the engine HTTP_ENGINE names. */
export function transportSuite(name: string) {
  const test = suite<{ server: TestServer }>(`${name} (${process.env.HTTP_ENGINE ?? 'auto'})`);
  test.before(async (context) => {
    context.server = await startTestServer({ testOperations: true });
  });
  test.after(async ({ server }) => {
    await server.close();
    removeTestBlobs();
  });
  return test;
}

export const MIB = 1024 * 1024;

/** An answer as it came: its status, its headers, its whole body. */
export interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** Reads a whole (small) answer. */
export async function collect(response: IncomingMessage): Promise<Answer> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return {
    status: response.statusCode ?? 0,
    headers: response.headers,
    body: Buffer.concat(chunks),
  };
}

/** Writes chunks with backpressure; stops quietly when the server has answered and closed. */
export async function writeAll(
  request: ClientRequest,
  chunks: Iterable<Uint8Array>,
): Promise<void> {
  for (const chunk of chunks) {
    if (request.destroyed) return;
    if (!request.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          request.off('drain', done);
          request.off('close', done);
          resolve();
        };
        request.on('drain', done);
        request.on('close', done);
      });
    }
  }
}

/**
 * One request as sent, byte for byte where it matters: the path is not normalised (fetch would
 * resolve `..` and re-encode), and the body is written in chunks with backpressure. The answer
 * is read as soon as it comes, even while the body is still being written.
 */
export function send(
  server: TestServer,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: Iterable<Uint8Array> } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({
      host: '127.0.0.1',
      port: server.port,
      method,
      path,
      headers: options.headers,
      agent: false,
    });
    let answered = false;
    request.on('response', (response) => {
      answered = true;
      collect(response).then(resolve, reject);
    });
    // Once answered, a write into a closed connection is expected (413 closes it).
    request.on('error', (error) => {
      if (!answered) reject(error);
    });
    void writeAll(request, options.body ?? []).then(() => {
      if (!request.destroyed) request.end();
    });
  });
}

/** An answer's body, read as JSON. */
export function json(answer: Answer): Record<string, unknown> {
  return JSON.parse(answer.body.toString()) as Record<string, unknown>;
}

/** `count` copies of `block`, made lazily: the client never holds more than one block. */
export function* repeat(block: Uint8Array, count: number): Generator<Uint8Array> {
  for (let i = 0; i < count; i++) yield block;
}

/** Stores `bytes` as the test blob `name`, with their length declared. */
export async function put(server: TestServer, name: string, bytes: Uint8Array): Promise<Answer> {
  return send(server, 'PUT', `/test/blobs/${name}`, {
    headers: { 'content-length': String(bytes.length) },
    body: [bytes],
  });
}

/** Sends raw bytes on a fresh connection; resolves with all the server said once it closed. */
export function rawExchange(server: TestServer, ...parts: (string | Buffer)[]): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(server.port, '127.0.0.1', () => {
      for (const part of parts) socket.write(part);
    });
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString()));
    // A reset is one of the answers under test: the text so far is the result.
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text));
    socket.on('end', () => socket.end());
  });
}

/** The status of every answer in raw HTTP text, in order. */
export function statusesOf(raw: string): number[] {
  return [...raw.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((match) => Number(match[1]));
}
