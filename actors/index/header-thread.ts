/**
 * The header thread (header-worker.ts) as saves use it: one thread for the process, started by
 * the first header too large to read on the event loop and kept for the next ones. Headers are
 * read one at a time, in the order they come; each has a deadline, counted from when the thread
 * starts reading it, after which the thread is terminated, the header answers an error naming
 * the deadline, and a fresh thread reads the rest. The bounds of yaml-header.ts keep every read
 * far below the deadline; the deadline is there for what those bounds did not foresee. An idle
 * thread does not hold the process open.
 */
import { Worker } from 'node:worker_threads';
import type { HeaderThreadReply, HeaderThreadRequest } from './header-worker.ts';
import type { HeaderReading } from './yaml-header.ts';

/** How long the thread may spend on one header before it is replaced. */
const HEADER_DEADLINE_MS = 2000;

/**
 * The worker's code: built JavaScript when this file is (deploy/build.mjs, what `npm start`
 * runs); from source, a boot file that registers tsx in the thread first (worker threads do not
 * inherit the main thread's loader on Node 20).
 */
const WORKER_ENTRY = import.meta.url.endsWith('.js')
  ? './header-worker.js'
  : './header-worker-boot.mjs';

interface Job {
  request: Omit<HeaderThreadRequest, 'id'>;
  deadlineMs: number | null;
  resolve(reading: HeaderReading): void;
  /** Test-only: called when another read queues behind this one. */
  onQueuedBehind?: () => void;
}

function deadlinePassed(deadlineMs: number): HeaderReading {
  return {
    error: `The YAML header took longer than ${deadlineMs} ms to read; the index gives a header at most ${deadlineMs} ms. Make it smaller or simpler.`,
  };
}

class HeaderThread {
  private worker: Worker | null = null;
  private ready = false;
  private readonly queue: Job[] = [];
  private running: { id: number; job: Job; timer: NodeJS.Timeout | null } | null = null;
  private nextId = 1;

  read(job: Job): void {
    this.running?.job.onQueuedBehind?.();
    for (const waiting of this.queue) waiting.onQueuedBehind?.();
    this.queue.push(job);
    this.pump();
  }

  /** Hands the next header to the thread when it is free, starting a thread if there is none. */
  private pump(): void {
    if (this.running) return;
    const job = this.queue.shift();
    if (!job) {
      this.worker?.unref();
      return;
    }
    const worker = this.worker ?? this.start();
    if (!this.ready) {
      this.queue.unshift(job);
      return;
    }
    worker.ref();
    const id = this.nextId++;
    const timer =
      job.deadlineMs === null ? null : setTimeout(() => this.expire(id), job.deadlineMs);
    this.running = { id, job, timer };
    worker.postMessage({ id, ...job.request } as HeaderThreadRequest);
  }

  private start(): Worker {
    const worker = new Worker(new URL(WORKER_ENTRY, import.meta.url));
    this.worker = worker;
    this.ready = false;
    worker.on('message', (reply: HeaderThreadReply) => {
      if (worker !== this.worker) return;
      if (reply === 'ready') {
        this.ready = true;
        this.pump();
      } else if (this.running?.id === reply.id) {
        this.finish(reply.reading);
      }
    });
    const stopped = (error?: Error) => {
      if (worker !== this.worker) return;
      const booted = this.ready;
      this.worker = null;
      this.ready = false;
      const reason = `The YAML header could not be read (${error?.message ?? 'the header thread stopped'}). Save it again.`;
      if (this.running) this.finish({ error: reason });
      // A thread that cannot even start would be restarted for ever: fail what waits instead.
      else if (!booted) for (const job of this.queue.splice(0)) job.resolve({ error: reason });
    };
    worker.on('error', stopped);
    worker.on('exit', () => stopped());
    return worker;
  }

  private expire(id: number): void {
    const running = this.running;
    if (running?.id !== id || running.job.deadlineMs === null) return;
    const worker = this.worker;
    this.worker = null;
    this.ready = false;
    void worker?.terminate();
    this.finish(deadlinePassed(running.job.deadlineMs));
  }

  /** Test-only: where the thread is, for a test that waited too long to say why. */
  describe(): string {
    const state = this.worker ? (this.ready ? 'ready' : 'starting') : 'none';
    return `header thread ${state}, ${this.running ? 'reading one header' : 'idle'}, ${this.queue.length} queued`;
  }

  private finish(reading: HeaderReading): void {
    const running = this.running;
    if (!running) return;
    if (running.timer) clearTimeout(running.timer);
    this.running = null;
    running.job.resolve(reading);
    this.pump();
  }
}

const thread = new HeaderThread();

/** Reads a header's source (between the `---` lines) on the header thread, within its deadline. */
export function readHeaderOffLoop(
  source: string,
  deadlineMs: number = HEADER_DEADLINE_MS,
): Promise<HeaderReading> {
  return new Promise((resolve) => thread.read({ request: { source }, deadlineMs, resolve }));
}

/** Test-only: the header thread busy with a read that lasts until released. */
export interface HeaderThreadHold {
  /** Resolves once a header read waits behind the hold. */
  readonly queuedBehind: Promise<void>;
  /** The hold's own reading: an error if its deadline passed first. */
  readonly done: Promise<HeaderReading>;
  release(): void;
}

/**
 * Test-only: occupies the header thread until released, as a header that takes that long to
 * read would; without `deadlineMs` the hold has no deadline.
 */
export function holdHeaderThread(deadlineMs: number | null = null): HeaderThreadHold {
  const hold = new SharedArrayBuffer(4);
  let queuedBehind: () => void = () => undefined;
  const waiting = new Promise<void>((resolve) => (queuedBehind = resolve));
  const done = new Promise<HeaderReading>((resolve) =>
    thread.read({ request: { hold }, deadlineMs, resolve, onQueuedBehind: queuedBehind }),
  );
  return {
    queuedBehind: waiting,
    done,
    release() {
      const flag = new Int32Array(hold);
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
    },
  };
}

/** Test-only: the header thread's state in words (HeaderThread.describe). */
export function describeHeaderThread(): string {
  return thread.describe();
}
