/**
 * Which answer `pay` gives: 402 with x402 requirements for x402 clients (see x402.ts), the HTML
 * page when `Accept` weighs `text/html` above `application/json` (what browsers send), and the
 * JSON instructions otherwise: no `Accept`, `*\/*` and ties all get JSON, since agents are the
 * usual callers. Media ranges weigh as in RFC 9110 §12.5.1: the most specific match counts.
 */
import { isX402Client, type RequestHeaders } from './x402.ts';

export type PayRepresentation = 'x402' | 'html' | 'json';

export function payRepresentation(
  headers: RequestHeaders,
  query: Readonly<Record<string, string | undefined>> = {},
): PayRepresentation {
  if (isX402Client(headers, query)) return 'x402';
  const accept = headers.accept ?? '';
  const html = weight(accept, 'text', 'html');
  const json = weight(accept, 'application', 'json');
  return html > json ? 'html' : 'json';
}

/** The q of the most specific range in `accept` that matches type/subtype (0: none). */
function weight(accept: string, type: string, subtype: string): number {
  let best = { specificity: 0, q: 0 };
  for (const part of accept.split(',')) {
    const [range = '', ...parameters] = part.split(';');
    const name = range.trim().toLowerCase();
    const specificity =
      name === `${type}/${subtype}` ? 3 : name === `${type}/*` ? 2 : name === '*/*' ? 1 : 0;
    if (specificity <= best.specificity) continue;
    let q = 1;
    for (const parameter of parameters) {
      const [key = '', value = ''] = parameter.split('=');
      if (key.trim().toLowerCase() !== 'q') continue;
      q = Number(value.trim());
      if (!Number.isFinite(q) || q < 0 || q > 1) q = 0;
    }
    best = { specificity, q };
  }
  return best.q;
}
