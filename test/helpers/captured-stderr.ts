/**
 * Runs `work` with this process's stderr captured: what it writes there meanwhile is returned,
 * not printed. For a test that provokes a diagnostic on purpose (a strict service's
 * `strictProtocol:` report): the test asserts it, and the run's output stays for the unexpected.
 */
export async function capturingStderr<T>(
  work: () => Promise<T>,
): Promise<{ result: T; written: string }> {
  const write = process.stderr.write;
  let written = '';
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    written += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    // The write's callback, when given, is still called, as the real write would.
    const callback = rest.find((argument) => typeof argument === 'function');
    if (callback) queueMicrotask(callback as () => void);
    return true;
  }) as typeof process.stderr.write;
  try {
    return { result: await work(), written };
  } finally {
    process.stderr.write = write;
  }
}
