import { mkdirSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { Driver, Queryable, Row } from './driver.ts';
import { DatabaseError } from './database-error.ts';
import type { WorkerReply } from './pglite-worker.ts';

/**
 * The embedded driver: PGlite in a worker thread, data under `dataDir`. PGlite has one
 * connection, so statements and transactions take turns here, in the main thread.
 */
export async function openPglite(dataDir: string): Promise<Driver> {
  mkdirSync(dataDir, { recursive: true });
  const worker = new Worker(new URL('./pglite-worker-boot.mjs', import.meta.url), {
    workerData: { dataDir },
  });
  const pending = new Map<number, { resolve: (rows: Row[]) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  let failure: Error | null = null;

  await new Promise<void>((resolve, reject) => {
    const onMessage = (message: unknown) => {
      if (message === 'ready') {
        worker.off('error', reject);
        resolve();
      }
    };
    worker.on('message', onMessage);
    worker.once('error', reject);
  });
  worker.on('message', (message: WorkerReply | 'ready' | 'closed') => {
    if (typeof message === 'string') return;
    const waiter = pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    if ('error' in message)
      waiter.reject(new DatabaseError(message.error.message, message.error.code));
    else waiter.resolve(message.rows);
  });
  worker.on('error', (error) => {
    failure = error;
    for (const waiter of pending.values()) waiter.reject(error);
    pending.clear();
  });

  const send = <T extends Row>(
    text: string,
    params: readonly unknown[] = [],
    script = false,
  ): Promise<T[]> => {
    if (failure) return Promise.reject(failure);
    const id = nextId++;
    return new Promise<T[]>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (rows: Row[]) => void, reject });
      worker.postMessage({ id, text, params, script });
    });
  };
  const runScript = async (text: string) => {
    await send(text, [], true);
  };

  // Turns: each statement or transaction waits for the one before it.
  let turn: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const result = turn.then(work, work);
    turn = result.catch(() => undefined);
    return result;
  };
  const inside: Queryable = { query: send, script: runScript };

  return {
    kind: 'pglite',
    query: (text, params) => exclusive(() => send(text, params)),
    script: (text) => exclusive(() => runScript(text)),
    transaction: (work) =>
      exclusive(async () => {
        await send('begin');
        try {
          const result = await work(inside);
          await send('commit');
          return result;
        } catch (error) {
          await send('rollback').catch(() => undefined);
          throw error;
        }
      }),
    async close() {
      await exclusive(async () => {
        if (failure) return;
        const closed = new Promise<void>((resolve) =>
          worker.on('message', (message) => message === 'closed' && resolve()),
        );
        worker.postMessage('close');
        await closed;
      });
      await worker.terminate();
    },
  };
}
