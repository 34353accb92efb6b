import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { LookupFunction } from 'node:net';
import { MAX_WEBHOOK_REDIRECTS } from '../../protocol/webhooks.ts';
import { boundedRequest, OutgoingTimeout } from '../kernel/outgoing-request.ts';
import {
  AddressRefused,
  checkedAddress,
  type AddressPolicy,
  type ResolvedAddress,
} from './address-guard.ts';

/** How one delivery attempt ended. */
export type PostOutcome = { ok: true; status: number } | { ok: false; error: string };

/**
 * The most bytes of a receiver's answer read: nobody reads it (the status is the answer), so a
 * few KiB lets a short body end and the kept-alive connection be reused; a longer one drops
 * the connection instead of draining it.
 */
export const WEBHOOK_ANSWER_BYTES = 4 * 1024;

// Kept-alive connections: a socket in the pool was opened to an address checked when it was
// opened, so reusing it reaches nothing unchecked.
const httpAgent = new HttpAgent({ keepAlive: true });
const httpsAgent = new HttpsAgent({ keepAlive: true });

/** A `lookup` that answers the checked address whatever is asked: the connection is pinned. */
function pinned(target: ResolvedAddress): LookupFunction {
  return (_host, options, callback) => {
    if ((options as { all?: boolean }).all) {
      (callback as unknown as (e: null, all: { address: string; family: number }[]) => void)(null, [
        { address: target.address, family: target.family },
      ]);
    } else callback(null, target.address, target.family);
  };
}

/**
 * POSTs `body` to `url`, checking the address before each connection (address-guard.ts) and
 * following at most MAX_WEBHOOK_REDIRECTS redirects by hand, each target checked the same way
 * and POSTed the same body and headers (307/308 keep the method; 301/302/303 are treated alike:
 * a webhook is a POST or nothing). The whole attempt, look-ups, redirects and answers included,
 * ends after `timeoutMs`; of each answer at most WEBHOOK_ANSWER_BYTES is read
 * (actors/kernel/outgoing-request.ts).
 */
export async function postWebhook(
  url: string,
  body: string,
  headers: Record<string, string>,
  policy: AddressPolicy,
  timeoutMs: number,
  stop: AbortSignal,
): Promise<PostOutcome> {
  const signal = AbortSignal.any([stop, AbortSignal.timeout(timeoutMs)]);
  let current = new URL(url);
  try {
    for (let hop = 0; ; hop++) {
      const target = await withSignal(checkedAddress(current, policy), signal);
      const https = current.protocol === 'https:';
      const response = await boundedRequest(
        current,
        {
          method: 'POST',
          agent: https ? httpsAgent : httpAgent,
          lookup: pinned(target),
          headers: {
            ...headers,
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
            'user-agent': 'agent-service-webhooks/1',
          },
          body,
        },
        { timeoutMs, maxAnswerBytes: WEBHOOK_ANSWER_BYTES, signal },
      );
      const status = response.status;
      if (status >= 200 && status < 300) return { ok: true, status };
      const location = response.headers.location;
      if (status >= 300 && status < 400 && location) {
        if (hop >= MAX_WEBHOOK_REDIRECTS)
          return { ok: false, error: `more than ${MAX_WEBHOOK_REDIRECTS} redirects` };
        const next = new URL(location, current);
        if (next.protocol !== 'http:' && next.protocol !== 'https:')
          return { ok: false, error: `redirected to a ${next.protocol} URL` };
        current = next;
        continue;
      }
      return { ok: false, error: `answered ${status}` };
    }
  } catch (error) {
    if (error instanceof AddressRefused) return { ok: false, error: `refused: ${error.message}` };
    if (stop.aborted) return { ok: false, error: 'the service stopped' };
    if (signal.aborted || error instanceof OutgoingTimeout)
      return { ok: false, error: `no answer within ${timeoutMs} ms` };
    const code = (error as NodeJS.ErrnoException).code;
    return { ok: false, error: `${code ?? 'failed'}: ${(error as Error).message}` };
  }
}

/** `work`, or a rejection when `signal` aborts first (a DNS look-up takes no signal). */
function withSignal<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise((resolve, reject) => {
    const abort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}
