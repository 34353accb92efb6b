import { Resolver } from 'node:dns/promises';
import type { SenderAuth } from './inbound.ts';

/** A DNS look-up as mailauth calls it (`resolver(name, rrtype)`), rejecting as node:dns does. */
export type DnsResolve = (name: string, rrtype: string) => Promise<unknown>;

/**
 * One message's DNS look-ups: node:dns's Resolver on the configured servers (MAIL_DNS_SERVERS;
 * the system's when empty), one try of `timeoutMs` each. Once a look-up has timed out, the rest
 * of the same check fail at once with ETIMEOUT: a server that does not answer makes the whole
 * check `temperror` within about one time limit, not one per look-up.
 */
export function checkResolver(servers: readonly string[], timeoutMs: number): DnsResolve {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  if (servers.length > 0) resolver.setServers([...servers]);
  let timedOut = false;
  return async (name, rrtype) => {
    if (timedOut)
      throw Object.assign(new Error(`DNS ${rrtype} ${name}: timed out`), { code: 'ETIMEOUT' });
    try {
      return await resolver.resolve(name, rrtype);
    } catch (error) {
      if ((error as { code?: string }).code === 'ETIMEOUT') timedOut = true;
      throw error;
    }
  };
}

/** Where the message came from, as the SMTP session saw it. */
export interface Arrival {
  ip: string;
  helo: string;
  /** The envelope's MAIL FROM ('' for a bounce). */
  envelopeFrom: string;
  /** This server's name, written in the verdict's Authentication-Results. */
  mta: string;
}

/**
 * SPF, DKIM and DMARC of one message (mailauth). `aligned` is DMARC's pass for the domain of
 * the message's one From address, which must be `from` (the address the door hands on): any
 * look-up that failed or timed out is `temperror` and never aligned; a check that throws is
 * `temperror` throughout.
 */
export async function checkSender(
  raw: Buffer,
  from: string | null,
  arrival: Arrival,
  resolve: DnsResolve,
): Promise<SenderAuth> {
  // Loaded by the first message rather than at start (~34 MB of RSS an idle door never needs).
  const { authenticate } = await import('mailauth');
  try {
    const result = await authenticate(raw, {
      ip: arrival.ip,
      helo: arrival.helo || arrival.ip,
      sender: arrival.envelopeFrom,
      mta: arrival.mta,
      resolver: resolve as never,
      disableArc: true,
      disableBimi: true,
    });
    const dkimResults = (result.dkim?.results ?? []) as { status?: { result?: string } }[];
    const dkim = dkimResults.some((row) => row.status?.result === 'pass')
      ? 'pass'
      : (dkimResults[0]?.status?.result ?? 'none');
    const spf = (result.spf as { status?: { result?: string } } | false)
      ? ((result.spf as { status?: { result?: string } }).status?.result ?? 'none')
      : 'none';
    const dmarcResult = result.dmarc as { status?: { result?: string } } | false;
    const dmarc = dmarcResult ? (dmarcResult.status?.result ?? 'none') : 'none';
    const headerFrom = (result.dkim as { headerFrom?: string | string[] }).headerFrom;
    const checkedFrom = Array.isArray(headerFrom)
      ? headerFrom.length === 1
        ? headerFrom[0]
        : undefined
      : headerFrom;
    const aligned =
      dmarc === 'pass' && from !== null && checkedFrom?.toLowerCase() === from.toLowerCase();
    return { spf, dkim, dmarc, aligned };
  } catch {
    return { spf: 'temperror', dkim: 'temperror', dmarc: 'temperror', aligned: false };
  }
}
