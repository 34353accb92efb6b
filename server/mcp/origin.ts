/**
 * Which browser origins may call /mcp: the MCP spec's defence against DNS rebinding, where a
 * page on an attacker's name that resolves to this host talks to a service meant to be private.
 * A request without `Origin` (every non-browser client) is never refused here.
 *
 * Admitted:
 * - the origin of BASE_URL;
 * - when BASE_URL is a loopback address, any loopback origin, any port (`localhost`,
 *   `127.x.x.x`, `[::1]`): a page served from this same machine (the MCP Inspector's UI, a
 *   local dev server) is as trusted as the machine, while a rebound public name never is;
 * - the origins of MCP_ALLOWED_ORIGINS, where `*` admits every origin (a public service with
 *   browser clients of its own: tokens are bearer headers, so rebinding reaches nothing private).
 */
export type OriginRule = (origin: string) => boolean;

export function originRule(baseUrl: string, allowed: readonly string[]): OriginRule {
  if (allowed.includes('*')) return () => true;
  const base = new URL(baseUrl);
  const admitted = new Set([base.origin, ...allowed]);
  const loopbackBase = isLoopback(base.hostname);
  return (origin) => {
    const url = parse(origin);
    if (!url) return false;
    if (admitted.has(url.origin)) return true;
    return loopbackBase && isLoopback(url.hostname);
  };
}

/** An origin as a URL, or undefined for `null` (sandboxed pages, files) and anything unparsable. */
function parse(origin: string): URL | undefined {
  try {
    const url = new URL(origin);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined;
  } catch {
    return undefined;
  }
}

function isLoopback(hostname: string): boolean {
  return (
    hostname === 'localhost' ||
    hostname === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
  );
}
