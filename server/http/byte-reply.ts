import type { ByteRange, ByteReply } from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import type { EngineRequest, EngineResponse } from './engine.ts';
import {
  httpDate,
  preconditionFailed,
  readDates,
  type ReadDates,
} from '../../protocol/conditional-dates.ts';

/**
 * The answer to a `bytes` reply, with the conditional and ranged requests HTTP clients send:
 * - `ETag` (the reply's etag, quoted) and `If-None-Match` -> 304 (GET and HEAD);
 * - `Last-Modified` (the reply's lastModified), `If-Modified-Since` -> 304 and
 *   `If-Unmodified-Since` -> 412 (protocol/conditional-dates.ts, which orders them by RFC 9110);
 * - one byte range in `Range` -> 206 with `Content-Range`, or 416 when it starts past the end
 *   (its `Content-Range` names the size); `If-Range` with another entity tag serves the whole
 *   instead. Several
 *   ranges, or a malformed one, are ignored (the whole is served, as RFC 9110 allows);
 * - HEAD: the same headers, no body;
 * - `Accept-Ranges: bytes` always.
 * The first chunk is read before anything is sent, so a source that cannot open answers an
 * error rather than a cut 200.
 */
export async function byteResponse(
  request: EngineRequest,
  status: number,
  reply: ByteReply,
  extraHeaders: Readonly<Record<string, string>>,
  log: (error: unknown) => void,
): Promise<EngineResponse> {
  const etag = reply.etag === undefined ? undefined : `"${reply.etag}"`;
  const headers: Record<string, string> = {
    ...extraHeaders,
    'content-type': reply.contentType,
    'accept-ranges': 'bytes',
  };
  if (etag !== undefined) headers.etag = etag;
  const conditional = request.method === 'GET' || request.method === 'HEAD';
  const lastModified = reply.lastModified;
  let dates: ReadDates = 'serve';
  if (lastModified !== undefined) {
    headers['last-modified'] = httpDate(lastModified);
    if (conditional) dates = readDates(request.headers, lastModified);
    if (dates === 'precondition_failed') throw preconditionFailed(lastModified, false);
  }
  const ifNoneMatch = request.headers['if-none-match'];
  if (
    dates === 'not_modified' ||
    (conditional && ifNoneMatch !== undefined && matchesAny(ifNoneMatch, etag))
  ) {
    const notModified: Record<string, string> = { ...extraHeaders };
    if (etag !== undefined) notModified.etag = etag;
    if (lastModified !== undefined) notModified['last-modified'] = httpDate(lastModified);
    return { status: 304, headers: notModified, body: '' };
  }
  let range: ByteRange | undefined;
  const rangeHeader = request.headers.range;
  if (conditional && status === 200 && rangeHeader !== undefined) {
    const ifRange = request.headers['if-range'];
    if (ifRange === undefined || (etag !== undefined && ifRange.trim() === etag)) {
      const parsed = parseRange(rangeHeader, reply.size);
      if (parsed === 'unsatisfiable') {
        throw new ServiceError(
          'range_not_satisfiable',
          `The Range starts past the end: the content has ${reply.size} bytes (0 to ${reply.size - 1}).`,
          { size: reply.size },
          { 'content-range': `bytes */${reply.size}` },
        );
      }
      if (parsed !== null) {
        range = parsed;
        status = 206;
        headers['content-range'] = `bytes ${parsed.start}-${parsed.end}/${reply.size}`;
        // A Content-MD5 names the whole; a part's body is not what it hashes.
        if (parsed.end - parsed.start + 1 < reply.size) delete headers['content-md5'];
      }
    }
  }
  const length = range ? range.end - range.start + 1 : reply.size;
  if (request.method === 'HEAD')
    return { status, headers, body: '', stream: { length, chunks: null } };
  if (length === 0) return { status, headers, body: '', stream: { length: 0, chunks: null } };
  const iterator = reply.open(range)[Symbol.asyncIterator]();
  const first = await iterator.next();
  return {
    status,
    headers,
    body: '',
    stream: { length, chunks: continueWith(first, iterator, log) },
  };
}

/** The source again from its first chunk; failures are logged here (the engine only cuts). */
async function* continueWith(
  first: IteratorResult<Uint8Array>,
  iterator: AsyncIterator<Uint8Array>,
  log: (error: unknown) => void,
): AsyncGenerator<Uint8Array, void, undefined> {
  let exhausted = false;
  try {
    let next = first;
    while (!next.done) {
      yield next.value;
      next = await iterator.next();
    }
    exhausted = true;
  } catch (error) {
    exhausted = true;
    log(error);
    throw error;
  } finally {
    // Stopped early (the client went away, the length was reached): release the source.
    if (!exhausted) await iterator.return?.();
  }
}

/** An `If-None-Match` list against the current entity tag (weak comparison, RFC 9110 §13.1.2). */
function matchesAny(header: string, etag: string | undefined): boolean {
  if (etag === undefined) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/** One range of `bytes=first-last`, `bytes=first-` or `bytes=-suffix`; null to ignore it. */
function parseRange(header: string, size: number): ByteRange | 'unsatisfiable' | null {
  const match = /^bytes=(\d*)-(\d*)$/i.exec(header.trim());
  if (!match) return null;
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return null;
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  if (last !== '' && Number(last) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end: last === '' ? size - 1 : Math.min(Number(last), size - 1) };
}
