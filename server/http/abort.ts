/**
 * A request's abort signal, made only when a route asks for it: most requests finish at once
 * and never need one, and an AbortController per request is a measurable cost on hot routes.
 */
export class LazyAbort {
  private controller: AbortController | null = null;
  private aborted = false;

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.aborted) this.controller.abort();
    return this.controller.signal;
  }

  abort(): void {
    this.aborted = true;
    this.controller?.abort();
  }
}
