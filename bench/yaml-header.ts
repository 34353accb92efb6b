/**
 * `npx tsx bench/yaml-header.ts`: what reading a markdown file's YAML header costs, beside the
 * baseline measured in the same run: the reading before issue 17 (the `yaml` package with
 * `uniqueKeys`, on the event loop, for headers of any size). Figures: an ordinary listing's
 * header (read on the event loop, now as then), the same header sent to the header thread (what
 * every save would pay if every header went there), a large header inside the bounds (read on
 * the thread: the event loop is held for none of it), and a hostile header (refused before any
 * parsing, beside the baseline's time for a third of its keys).
 */
import { performance } from 'node:perf_hooks';
import { parseDocument } from 'yaml';
import { readHeaderOffLoop } from '../actors/index/header-thread.ts';
import { listingMarkdown } from '../actors/store/listings.ts';
import { indexEntry, indexEntryHere } from '../actors/index/capture.ts';

/** The reading before issue 17, kept here as the baseline. */
function baselineReading(source: string): unknown {
  const document = parseDocument(source, { uniqueKeys: true, prettyErrors: true });
  if (document.errors.length > 0) return document.errors[0];
  return JSON.parse(JSON.stringify(document.toJS({ maxAliasCount: 100 })));
}

const markdown = (source: string) => Buffer.from(`---\n${source}\n---\nbody\n`, 'utf8');

/** Microseconds per call, after a warm-up, over `count` calls. */
async function perCall(count: number, run: () => unknown): Promise<number> {
  for (let i = 0; i < Math.min(200, count); i++) await run();
  const started = performance.now();
  for (let i = 0; i < count; i++) await run();
  return ((performance.now() - started) * 1000) / count;
}

const listing = listingMarkdown({
  kind: 'can',
  convention: 'local-services',
  name: 'Bicycle repair in Berlin',
  description: 'Flat tyres, brakes and gears, fixed the same day; we come to you.',
  can: 'Repair bicycles',
  contact: 'Knock on my workspace.',
  dimensions: { task_type: 'repair', city: 'berlin', price: '40 EUR per hour' },
});
const listingSource = /^---\n([\s\S]*?)\n---/.exec(listing)?.[1] as string;
const listingBytes = Buffer.from(listing, 'utf8');
const COUNT = 2000;

/** Medians over rounds that take turns, so that warm-up and a busy machine favour none. */
async function medians(rounds: number, cases: (() => Promise<number>)[]): Promise<number[]> {
  const figures: number[][] = cases.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (const [index, measure] of cases.entries()) figures[index]?.push(await measure());
  }
  return figures.map((list) => list.sort((a, b) => a - b)[Math.floor(list.length / 2)] as number);
}

console.log(`An ordinary listing header (${Buffer.byteLength(listingSource)} bytes), per save:`);
await readHeaderOffLoop(listingSource); // the thread started, outside the figures
const [baseline, inline, routed, threaded] = await medians(5, [
  () => perCall(COUNT, () => baselineReading(listingSource)),
  () => perCall(COUNT, () => indexEntryHere(listingBytes, listingBytes.length)),
  () => perCall(COUNT, () => indexEntry(listingBytes, listingBytes.length)),
  () => perCall(COUNT, () => readHeaderOffLoop(listingSource)),
]);
console.log(`  baseline (uniqueKeys, on the loop)   ${baseline?.toFixed(1)} µs`);
console.log(`  now, on the loop (indexEntryHere)    ${inline?.toFixed(1)} µs`);
console.log(`  now, through indexEntry (as saves)   ${routed?.toFixed(1)} µs`);
console.log(`  now, if sent to the header thread    ${threaded?.toFixed(1)} µs`);

const large = Array.from({ length: 900 }, (_, i) => `key${i}: ${'x'.repeat(60)}`).join('\n');
const largeBytes = markdown(large);
console.log(`A large header inside the bounds (${Buffer.byteLength(large)} bytes, 900 keys):`);
const largeBaseline = await perCall(20, () => baselineReading(large));
const largeNow = await perCall(20, () => indexEntry(largeBytes, largeBytes.length));
console.log(`  baseline, all of it on the loop      ${(largeBaseline / 1000).toFixed(1)} ms`);
console.log(`  now, on the header thread (latency)  ${(largeNow / 1000).toFixed(1)} ms`);

const keys = (count: number) => Array.from({ length: count }, (_, i) => `k${i}: v`).join('\n');
const hostile = markdown(keys(30_000));
console.log('A hostile header of 30,000 keys:');
const hostileBaseline = await perCall(1, () => baselineReading(keys(10_000)));
const hostileNow = await perCall(20, () => indexEntry(hostile, hostile.length));
console.log(
  `  baseline, 10,000 of its keys, on the loop  ${(hostileBaseline / 1000).toFixed(0)} ms`,
);
console.log(`  now, all 30,000, refused on its size       ${(hostileNow / 1000).toFixed(2)} ms`);
