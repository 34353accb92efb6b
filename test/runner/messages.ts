import type { FileResult } from './run-file.ts';

/** What test/run.ts tells a worker (./worker.ts). */
export type ToWorker =
  { type: 'run'; path: string; name: string } | { type: 'report' } | { type: 'end' };

/** What a worker tells test/run.ts. */
export type ToParent =
  | { type: 'ready' }
  | { type: 'output'; text: string }
  | { type: 'result'; result: FileResult }
  | { type: 'report'; waitingOn: string[] }
  | { type: 'ended'; postgresSkipped: string[]; clientsSkipped: string[] };
