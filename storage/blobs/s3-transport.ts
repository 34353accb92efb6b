/**
 * The HTTP(S) transport the minio client sends through: Node's own, plus a time limit on
 * silence. minio sets no timeout, so an S3 endpoint that accepts connections and never answers
 * (a black-holed address, a hung proxy) would hold a put for ever; here a request that goes
 * `timeoutMs` without a byte moving fails with ETIMEDOUT (BlobStoreUnavailableError). Once the
 * answer starts, the limit is lifted: a download goes at its reader's pace, however slow.
 */
import * as http from 'node:http';
import * as https from 'node:https';

type Request = (
  options: http.RequestOptions,
  callback?: (response: http.IncomingMessage) => void,
) => http.ClientRequest;

export function transportWithTimeout(
  useSSL: boolean,
  timeoutMs: number,
): Pick<typeof http, 'request'> {
  const send: Request = useSSL ? https.request : http.request;
  const request: Request = (options, callback) => {
    const outgoing = send(options, callback);
    outgoing.setTimeout(timeoutMs, () => {
      const silence = new Error(`S3 sent nothing for ${timeoutMs} ms`);
      outgoing.destroy(Object.assign(silence, { code: 'ETIMEDOUT' }));
    });
    outgoing.once('response', () => outgoing.setTimeout(0));
    return outgoing;
  };
  // minio calls `request(options, callback)` only, the one form of Node's overloads kept here.
  return { request: request as typeof http.request };
}
