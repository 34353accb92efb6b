import { readFileSync } from 'node:fs';

import { StartRefusal } from '../actors/kernel/settings.ts';

export { StartRefusal };

/**
 * Why a door could not listen, in one line an operator can act on: the port, the variable that
 * sets it and the fix.
 */
export class ListenError extends StartRefusal {
  override name = 'ListenError';
  constructor(door: 'HTTP' | 'SMTP', host: string, port: number, cause: unknown) {
    const variable = door === 'HTTP' ? 'PORT' : 'SMTP_PORT';
    const fixes =
      door === 'HTTP'
        ? `set ${variable} to a free port (${variable}=0 for any free port)`
        : `set ${variable} to a free port (${variable}=0 for any free port, ${variable}=off for no mail door)`;
    super(
      `cannot start: the ${door} door cannot listen on ${host}:${port} (${variable}): ` +
        `${reasonOf(cause, port)}; ${fixes}`,
      { cause },
    );
  }
}

/** The system's reason, in words (the error code alone, when it is none of these). */
function reasonOf(cause: unknown, port: number): string {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'EADDRINUSE': {
      const range = ephemeralPortRange();
      return range && port >= range[0] && port <= range[1]
        ? `the port is already in use (EADDRINUSE), and ${range[0]}-${range[1]} is the ` +
            "system's ephemeral range, lent to outgoing connections and binds to port 0 " +
            '(pick a port outside it)'
        : 'the port is already in use (EADDRINUSE)';
    }
    case 'EACCES':
      return 'this user may not listen on that port (EACCES; ports below 1024 need root)';
    case 'EADDRNOTAVAIL':
      return 'the address is not one of this machine (EADDRNOTAVAIL)';
    default:
      return code ?? (cause instanceof Error ? cause.message : String(cause));
  }
}

/**
 * The ports the system hands out by itself (outgoing connections, binds to port 0), on Linux;
 * null elsewhere. A port kept across restarts must lie outside: between two runs, any socket of
 * the machine may be given it.
 */
export function ephemeralPortRange(): [number, number] | null {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    return low && high ? [low, high] : null;
  } catch {
    return null;
  }
}
