/**
 * The one door for the service's outgoing HTTP requests (webhooks, chain RPC): every answer is
 * read under one deadline that covers the look-up, connect, request, headers and body, and at
 * most `maxAnswerBytes` of its body is kept. Past that the connection is dropped, never read
 * to its end: a receiver that answers 200 and then streams for ever costs one chunk, not
 * gigabytes (issue 32). The list of outgoing call sites, and why each is bounded, is held by
 * test/lint/outgoing-call-sites.test.ts.
 */
import {
  request as httpRequest,
  type Agent as HttpAgent,
  type IncomingHttpHeaders,
  type IncomingMessage,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';

/** The most header bytes of an answer (Node's parser fails the request past it). */
export const MAX_ANSWER_HEADER_BYTES = 8 * 1024;

export interface OutgoingLimits {
  /** One deadline for the whole exchange: look-up, connect, request, headers and body. */
  timeoutMs: number;
  /** The most bytes of the answer's body kept; past it the connection is dropped. */
  maxAnswerBytes: number;
  /** Ends the exchange early too (the service stopping, a caller's wider deadline). */
  signal?: AbortSignal | undefined;
}

export interface OutgoingRequest {
  method: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** A pool of kept-alive sockets (node:http's or node:https's Agent, per the URL's scheme). */
  agent?: HttpAgent;
  /** How the host is resolved (the webhooks pin the address they checked). */
  lookup?: LookupFunction;
}

export interface OutgoingAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body, or its first `maxAnswerBytes` when `truncated`. */
  body: Buffer;
  /** The body went past `maxAnswerBytes`: the rest was never read and the socket is gone. */
  truncated: boolean;
  /** Bytes of the body taken off the socket (at most one chunk more than was kept). */
  bytesRead: number;
}

/** The deadline passed before the exchange ended. */
export class OutgoingTimeout extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(readonly timeoutMs: number) {
    super(`no complete answer within ${timeoutMs} ms`);
  }
}

/** One request, its answer read within the limits; rejects on the deadline or a failure. */
export function boundedRequest(
  url: URL,
  outgoing: OutgoingRequest,
  limits: OutgoingLimits,
): Promise<OutgoingAnswer> {
  const deadline = AbortSignal.timeout(limits.timeoutMs);
  const signal = limits.signal ? AbortSignal.any([limits.signal, deadline]) : deadline;
  if (signal.aborted) return Promise.reject(stopped(signal, deadline, limits.timeoutMs));
  return new Promise<OutgoingAnswer>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', abort);
      outcome();
    };
    const fail = (error: Error) => settle(() => reject(error));
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
      method: outgoing.method,
      headers: outgoing.headers,
      agent: outgoing.agent,
      lookup: outgoing.lookup,
      maxHeaderSize: MAX_ANSWER_HEADER_BYTES,
    });
    const abort = () => {
      const error = stopped(signal, deadline, limits.timeoutMs);
      fail(error);
      request.destroy(error);
    };
    signal.addEventListener('abort', abort, { once: true });
    request.on('error', fail);
    request.on('response', (response: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      let bytesRead = 0;
      const answer = (truncated: boolean): OutgoingAnswer => ({
        status: response.statusCode ?? 0,
        headers: response.headers,
        body: Buffer.concat(chunks, kept),
        truncated,
        bytesRead,
      });
      response.on('data', (chunk: Buffer) => {
        bytesRead += chunk.length;
        const room = limits.maxAnswerBytes - kept;
        if (chunk.length <= room) {
          chunks.push(chunk);
          kept += chunk.length;
          return;
        }
        if (room > 0) chunks.push(chunk.subarray(0, room));
        kept = limits.maxAnswerBytes;
        settle(() => resolve(answer(true)));
        // Nothing more is read: the socket goes, and with it whatever the peer still sends.
        request.destroy();
      });
      response.on('end', () => settle(() => resolve(answer(false))));
      response.on('error', fail);
      response.on('close', () => {
        if (!response.complete) fail(new Error('the answer ended before its end'));
      });
    });
    request.end(outgoing.body);
  });
}

function stopped(signal: AbortSignal, deadline: AbortSignal, timeoutMs: number): Error {
  if (deadline.aborted) return new OutgoingTimeout(timeoutMs);
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error('the request was stopped');
}

/** The fetch function that libraries taking one (viem's `fetchFn`) are given. */
export type FetchFunction = (
  input: string | URL | Request,
  init?: RequestInit,
) => Promise<Response>;

/**
 * A `fetch` whose every answer goes through `boundedRequest`: the body is read in full, within
 * the deadline, before the Response is handed back, and an answer larger than `maxAnswerBytes`
 * is an error (a truncated JSON body is no answer). The init's `signal` ends it early.
 */
export function boundedFetch(limits: Omit<OutgoingLimits, 'signal'>): FetchFunction {
  return async (input, init = {}) => {
    const url = new URL(input instanceof Request ? input.url : input);
    if (
      input instanceof Request ||
      (init.body !== undefined && init.body !== null && typeof init.body !== 'string')
    ) {
      throw new TypeError('boundedFetch takes a URL and a string body');
    }
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const body = init.body ?? undefined;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const answer = await boundedRequest(
      url,
      { method: init.method ?? 'GET', headers, body },
      { ...limits, signal: init.signal ?? undefined },
    );
    if (answer.truncated) {
      throw new Error(`the answer of ${url.host} is larger than ${limits.maxAnswerBytes} bytes`);
    }
    const answerHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) answerHeaders.append(name, one);
    }
    const empty =
      answer.status === 204 ||
      answer.status === 304 ||
      (answer.status >= 100 && answer.status < 200);
    // A copy (at most maxAnswerBytes) the web Response type accepts.
    const bytes = new Uint8Array(answer.body);
    return new Response(empty ? null : bytes, {
      status: answer.status,
      headers: answerHeaders,
    });
  };
}
