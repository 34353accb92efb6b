import { startBenchServer } from './bench-server.ts';
import { startRawUws } from './baselines.ts';
import { measureLoad, type LoadResult } from './load.ts';

/** ~10 connections, no pipelining: the shape of a handful of busy agents, not a synthetic peak. */
const CONNECTIONS = 10;
const SECONDS = 5;

/** Authenticated `GET /whoami` on one engine of the real service (fresh PGlite copy, port 0). */
export async function measureWhoami(
  engine: 'uws' | 'node',
  log: (message: string) => void,
  signal: AbortSignal,
): Promise<LoadResult> {
  const server = await startBenchServer({ httpEngine: engine, log });
  try {
    const { api_token: token } = await server.signUp('bench whoami');
    // A token that fails would make a fast 401 look like throughput: check one answer first.
    const probe = await server.get('/whoami', token);
    if (probe.status !== 200)
      throw new Error(`whoami answered ${probe.status}: ${await probe.text()}`);
    return await measureLoad(
      {
        url: server.url('/whoami'),
        headers: { authorization: `Bearer ${token}` },
        connections: CONNECTIONS,
        seconds: SECONDS,
      },
      signal,
    );
  } finally {
    await server.close();
  }
}

/** The same load against uWS answering a constant JSON body. */
export async function measureRawUws(signal: AbortSignal): Promise<LoadResult> {
  const raw = await startRawUws();
  try {
    return await measureLoad(
      { url: `${raw.baseUrl}/hello`, connections: CONNECTIONS, seconds: SECONDS },
      signal,
    );
  } finally {
    await raw.close();
  }
}
