/**
 * Why a door could not listen, in one line an operator can act on: the port, the variable that
 * sets it and the fix. main.ts prints it and exits 1, without a stack (a busy port is not a bug).
 */
export class ListenError extends Error {
  constructor(door: 'HTTP' | 'SMTP', host: string, port: number, cause: unknown) {
    const variable = door === 'HTTP' ? 'PORT' : 'SMTP_PORT';
    const fixes =
      door === 'HTTP'
        ? `set ${variable} to a free port (${variable}=0 for any free port)`
        : `set ${variable} to a free port (${variable}=0 for any free port, ${variable}=off for no mail door)`;
    super(
      `cannot start: the ${door} door cannot listen on ${host}:${port} (${variable}): ` +
        `${reasonOf(cause)}; ${fixes}`,
      { cause },
    );
    this.name = 'ListenError';
  }
}

/** The system's reason, in words (the error code alone, when it is none of these). */
function reasonOf(cause: unknown): string {
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  switch (code) {
    case 'EADDRINUSE':
      return 'the port is already in use (EADDRINUSE)';
    case 'EACCES':
      return 'this user may not listen on that port (EACCES; ports below 1024 need root)';
    case 'EADDRNOTAVAIL':
      return 'the address is not one of this machine (EADDRNOTAVAIL)';
    default:
      return code ?? (cause instanceof Error ? cause.message : String(cause));
  }
}
