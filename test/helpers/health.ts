import type { TestServer } from './server.ts';
import { eventually } from './turns.ts';

/**
 * `GET /health` once it says the database is away (503), after a test took the database away.
 * /health waits at most 50 ms for its probe of the database (server/health-probe.ts: it must
 * answer within 100 ms whatever runs), and on a loaded machine the probe's refusal took 54 ms
 * (a closed pool's connection, then a refused one): that /health answers from the last probe,
 * and the next one from the refusal. Asking once made tests fail now and then in CI.
 */
export function healthOnceDegraded(server: TestServer): Promise<Response> {
  return eventually('/health says degraded', async () => {
    const answer = await server.get('/health');
    return answer.status === 503 ? answer : null;
  });
}
