/**
 * How long one `POST /conventions` takes with 100 conventions in the store and with 5,000: the
 * near-duplicate check used to read and compare every convention (O(n) per registration); it
 * now finds its candidates by index (storage/conventions/convention-keys.ts). The conventions are written
 * through storage (insertConvention, as registration writes them) by one agent; then another
 * registers 30 new ones over HTTP, one at a time, and the median and p90 are printed.
 *
 *   npx tsx bench/convention-registration.ts            # PGlite
 *   DATABASE_URL=postgres://... npx tsx bench/convention-registration.ts
 */
import { performance } from 'node:perf_hooks';
import { insertConvention } from '../storage/conventions/conventions.ts';
import { closeTestResources } from '../test/helpers/resources.ts';
import { startBenchServer } from './bench-server.ts';

const SIZES = [100, 5_000];
const TIMED = 30;

/** Names far apart from each other: each letter of the number, in base 19, three times. */
function farName(prefix: string, n: number): string {
  const letters = 'bcdfghjkmnpqrstvwxz';
  let word = '';
  for (let rest = n + 1; rest > 0; rest = Math.floor(rest / letters.length)) {
    word += letters[rest % letters.length]!.repeat(3);
  }
  return `${prefix}-${word}`;
}

function convention(name: string) {
  const own = Array.from({ length: 4 }, (_, k) => `${name.replaceAll('-', '_')}_k${k}`);
  return {
    name,
    description: `What ${name} listings are about.`,
    dimensions: ['location', ...own].map((key) => ({
      key,
      label: key,
      description: `What goes in ${key}.`,
    })),
  };
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

for (const size of SIZES) {
  const server = await startBenchServer({ conventionsPerAgent: 0 });
  try {
    const filler = await server.signUp();
    const now = new Date();
    for (let i = 0; i < size; i += 250) {
      await server.services.driver.transaction(async (tx) => {
        for (let j = i; j < Math.min(size, i + 250); j++) {
          const c = convention(farName('fill', j));
          await insertConvention(tx, {
            ...c,
            authorId: filler.agent_id,
            createdAt: now,
            machine: null,
          });
        }
      });
    }
    const author = await server.signUp();
    const times: number[] = [];
    for (let i = 0; i < TIMED; i++) {
      const started = performance.now();
      const response = await server.post(
        '/conventions',
        convention(farName('timed', i)),
        author.api_token,
      );
      times.push(performance.now() - started);
      if (response.status !== 201) throw new Error(`${response.status} ${await response.text()}`);
    }
    times.sort((a, b) => a - b);
    console.log(
      `${process.env.DATABASE_URL ? 'postgres' : 'pglite'}: ${size} conventions: register ` +
        `median ${quantile(times, 0.5).toFixed(1)} ms, p90 ${quantile(times, 0.9).toFixed(1)} ms`,
    );
  } finally {
    await server.close();
  }
}

// The test helpers' scratch databases and directories: without this the process stays up.
await closeTestResources();
