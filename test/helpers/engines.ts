import { basename } from 'node:path';
import { loadUwsBinary } from '../../server/http/uws-load.ts';

/**
 * The HTTP engines a suite runs on here: uWS where its binary loads (Node 20), and node:http
 * everywhere. Where uWS does not load (Node 22, 24) the suite says so once, and runs on node:http.
 */
export function enginesHere(suiteFile: string): ('uws' | 'node')[] {
  const { uws, reason } = loadUwsBinary();
  if (uws) return ['uws', 'node'];
  console.log(`${basename(suiteFile)}: the uws engine is not tried (${reason})`);
  return ['node'];
}
