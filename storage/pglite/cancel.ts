import { Session } from 'node:inspector';

/**
 * Cancels a statement inside a PGlite worker thread without stopping the thread, as a cancel
 * request does on PostgreSQL.
 *
 * PGlite 0.5.16 has no cancel of its own: its WebAssembly memory is not shared, and the thread
 * is busy inside the query, so no message reaches it until the query ends; the only way out was
 * to terminate the thread (and reopen the database, ~0.7 s that every caller waited). But the
 * V8 inspector can run a function on a busy thread: a `Runtime.evaluate` sent through the
 * `NodeWorker` domain of an in-process session runs at the thread's next interrupt check, even
 * in the middle of WebAssembly. The function (the worker's CANCEL_HOOK) sets PostgreSQL's own
 * `QueryCancelPending` and `InterruptPending`, just what its SIGINT handler sets; the query then
 * stops at its next CHECK_FOR_INTERRUPTS with 57014 and the connection lives on.
 *
 * Best effort: when the inspector is missing or not yet attached to the thread, `cancel`
 * returns false, and the driver stops the thread as before; so it does when a canceled query
 * does not stop soon enough.
 */
export const CANCEL_HOOK = '__agentServiceCancelStatement';

/** The worker threads to which the session is attached, by thread id: their inspector session. */
const attached = new Map<number, string>();
let session: Session | null | undefined;
let messageId = 0;

/** The file every PGlite worker thread starts from (thread.ts). */
const WORKER_FILE = '/pglite/worker.mjs';

function connect(): Session | null {
  if (session !== undefined) return session;
  try {
    const opened = new Session();
    opened.connect();
    opened.on('NodeWorker.attachedToWorker', (message) => {
      const { sessionId, workerInfo } = message.params as {
        sessionId: string;
        workerInfo: { workerId: string; url: string };
      };
      // Other workers of the process are none of this module's business.
      if (!workerInfo.url.endsWith(WORKER_FILE)) {
        opened.post('NodeWorker.detach', { sessionId }, () => undefined);
        return;
      }
      attached.set(Number(workerInfo.workerId), sessionId);
      // The first message to a thread's session is delivered only when the thread is idle
      // (later ones interrupt it even mid-query): send that first one now.
      evaluate(opened, sessionId, '0');
    });
    opened.on('NodeWorker.detachedFromWorker', (message) => {
      const { sessionId } = message.params as { sessionId: string };
      for (const [threadId, id] of attached) if (id === sessionId) attached.delete(threadId);
    });
    opened.post('NodeWorker.enable', { waitForDebuggerOnStart: false }, () => undefined);
    session = opened;
  } catch {
    // No inspector in this build of Node.js, or it refused a session: stopping threads it is.
    session = null;
  }
  return session;
}

/** Starts watching for PGlite worker threads; call before starting one. */
export function watchPgliteThreads(): void {
  connect();
}

/**
 * Asks the thread `threadId` to cancel request `requestId` if that request is still running.
 * Returns false when it cannot even ask (no inspector, or not attached to that thread yet).
 */
export function cancelInThread(threadId: number, requestId: number): boolean {
  const sessionId = attached.get(threadId);
  if (!session || sessionId === undefined) return false;
  evaluate(session, sessionId, `globalThis.${CANCEL_HOOK}?.(${Number(requestId)})`);
  return true;
}

function evaluate(on: Session, sessionId: string, expression: string): void {
  const message = JSON.stringify({
    id: ++messageId,
    method: 'Runtime.evaluate',
    params: { expression },
  });
  on.post('NodeWorker.sendMessageToWorker', { sessionId, message }, () => undefined);
}
