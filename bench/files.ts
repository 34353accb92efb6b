import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { copyFile, rm } from 'node:fs/promises';
import { Agent, request as httpRequest, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import type uWS from '@trufflesuite/uws-js-unofficial';
import { loadUws } from '../server/http/uws-engine.ts';
import { onTestsEnd } from '../test/helpers/resources.ts';
import { startBenchServer } from './bench-server.ts';
import { openFilesystemBlobStore } from '../storage/blobs/filesystem-store.ts';
import type { Driver, Row, Transaction, TransactionOptions } from '../storage/driver.ts';
import type { Baseline } from './baselines.ts';

const MIB = 1024 * 1024;
const SMALL = MIB;
const LARGE = 100 * MIB;
const SMALL_RUNS = 20;
const LARGE_RUNS = 5;
/** The client writes its body in pieces of this size, so it never holds a whole file. */
const CHUNK = 256 * 1024;
const RSS_SAMPLE_MS = 20;
/** MB/s and RSS MB are in units of 10^6 bytes. */
const MB = 1e6;

/** One transfer path at one size: MB/s over its timed runs. */
export interface TransferFigure {
  path: string;
  bytes: number;
  runs: number;
  medianMbPerSecond: number;
  bestMbPerSecond: number;
  /** Peak RSS of this process above its level just before the transfer, the worst run. */
  peakExtraRssMb?: number;
}

export interface FileBench {
  figures: TransferFigure[];
  /**
   * Peak extra RSS during the first 100 MiB PUT of each path, before any timed run: what a
   * process that has not yet grown its buffers takes on (the timed runs reuse that growth).
   */
  firstLargePut?: { serviceMb: number; sinkMb: number };
  /** RSS samples taken during the shortest sampled PUT (proof the sampler kept up). */
  fewestRssSamples?: number;
  /**
   * SQL statements the service ran per 1 MiB PUT that replaces a file (the median of
   * STATEMENT_RUNS saves, counted at the driver: autocommitted and in transactions alike), and
   * the transactions among them.
   */
  statementsPerSave?: { statements: number; transactions: number };
}

const STATEMENT_RUNS = 5;

/**
 * The baseline of a PUT (issue 36): a bare uWS app that hashes the body (sha256) and fsyncs
 * the file, the least work a save that promises durability does.
 */
export const DURABLE_SINK = 'raw uWS sink + sha256 + fsync PUT (baseline)';

/**
 * Not a baseline but the floor of the service's own design: the same bare uWS app handing each
 * body to the service's filesystem blob store (SHA-256 and MD5, a temporary file, its fsync, the
 * rename and the directory's fsync), with no database, token or route. What the service adds
 * beyond this row is its database work; what this row adds beyond the durable sink is what the
 * store promises beyond it (an MD5 for Content-MD5, a blob that appears whole or not at all).
 */
export const STORE_SINK = 'raw uWS + the blob store alone, no database (floor)';

/** Counts the statements and transactions `driver` runs while `run` goes. */
async function countStatements(
  driver: Driver,
  run: () => Promise<void>,
): Promise<{ statements: number; transactions: number }> {
  const counted = { statements: 0, transactions: 0 };
  const countIn = (tx: Transaction): Transaction => ({
    query: (text, params) => {
      counted.statements++;
      return tx.query(text, params);
    },
    lastQuery: (text, params) => {
      counted.statements++;
      return tx.lastQuery(text, params);
    },
    queryTable: (text, params) => {
      counted.statements++;
      return tx.queryTable(text, params);
    },
    script: (text) => tx.script(text),
    savepoint: (work) => tx.savepoint((inner) => work(countIn(inner))),
  });
  const { query, transaction } = driver;
  const patched = driver as { -readonly [K in keyof Driver]: Driver[K] };
  patched.query = <T extends Row = Row>(text: string, params?: readonly unknown[]) => {
    counted.statements++;
    return query.call(driver, text, params) as Promise<T[]>;
  };
  patched.transaction = <T>(
    work: (tx: Transaction) => Promise<T>,
    options?: TransactionOptions,
  ) => {
    counted.transactions++;
    return transaction.call(driver, (tx) => work(countIn(tx)), options) as Promise<T>;
  };
  try {
    await run();
  } finally {
    patched.query = query;
    patched.transaction = transaction;
  }
  return counted;
}

/** The body the client streams: one random chunk, repeated, with a stamp so no two are equal. */
const pattern = randomBytes(CHUNK);
let stamps = 0;

/** Writes `size` bytes to a request as the socket takes them (waits for `drain`). */
function streamBody(request: ClientRequest, size: number): void {
  const first = Buffer.from(pattern);
  first.writeDoubleBE(++stamps, 0);
  first.writeDoubleBE(Math.random(), 8);
  let sent = 0;
  const write = () => {
    while (sent < size) {
      const piece = sent === 0 ? first : pattern;
      const length = Math.min(piece.length, size - sent);
      sent += length;
      const ok = request.write(length === piece.length ? piece : piece.subarray(0, length));
      if (!ok) {
        request.once('drain', write);
        return;
      }
    }
    request.end();
  };
  write();
}

interface Answer {
  status: number;
  body: string;
  bytes: number;
}

/** One HTTP exchange on node:http; the answer's body is counted, and kept only when small. */
function exchange(
  agent: Agent,
  url: string,
  method: 'PUT' | 'GET',
  headers: Record<string, string>,
  uploadBytes: number,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      url,
      {
        method,
        agent,
        headers:
          method === 'PUT'
            ? {
                ...headers,
                'content-type': 'application/octet-stream',
                'content-length': String(uploadBytes),
              }
            : headers,
      },
      (response) => {
        let bytes = 0;
        let body = '';
        response.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (body.length < 4096) body += chunk.toString('utf8', 0, 4096);
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body, bytes }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    if (method === 'PUT') streamBody(request, uploadBytes);
    else request.end();
  });
}

/** Samples this process's RSS every 20 ms while `run` goes; answers the peak above the start. */
async function withPeakRss<T>(
  run: () => Promise<T>,
): Promise<{ value: T; extraMb: number; samples: number }> {
  const start = process.memoryUsage.rss();
  let peak = start;
  let samples = 0;
  const sample = () => {
    samples++;
    const rss = process.memoryUsage.rss();
    if (rss > peak) peak = rss;
  };
  const timer = setInterval(sample, RSS_SAMPLE_MS);
  try {
    const value = await run();
    sample();
    return { value, extraMb: (peak - start) / MB, samples };
  } finally {
    clearInterval(timer);
  }
}

/** Times one transfer of `bytes` (which throws when the answer is not the expected one): MB/s. */
async function timed(bytes: number, run: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await run();
  return bytes / MB / ((performance.now() - started) / 1000);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] ?? 0)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

/** Collects runs per path, in the order the paths were first seen. */
class Figures {
  private readonly byKey = new Map<
    string,
    { rates: number[]; rss: number[]; path: string; bytes: number }
  >();

  add(path: string, bytes: number, rate: number, extraRssMb?: number): void {
    const key = `${path}\0${bytes}`;
    let entry = this.byKey.get(key);
    if (!entry) {
      entry = { rates: [], rss: [], path, bytes };
      this.byKey.set(key, entry);
    }
    entry.rates.push(rate);
    if (extraRssMb !== undefined) entry.rss.push(extraRssMb);
  }

  list(): TransferFigure[] {
    return [...this.byKey.values()].map(({ rates, rss, path, bytes }) => ({
      path,
      bytes,
      runs: rates.length,
      medianMbPerSecond: median(rates),
      bestMbPerSecond: Math.max(...rates),
      ...(rss.length > 0 ? { peakExtraRssMb: Math.max(...rss) } : {}),
    }));
  }
}

/**
 * The ceiling for a PUT: a bare uWS app that writes each body to a file as it arrives, pausing
 * the socket while the file stream is full, and answers 201 when the file is closed. On
 * `/durable` it also does what the service must: hashes the bytes (sha256) and fsyncs the file
 * before answering; that row shows how much of the gap is that work rather than the service.
 */
async function startRawUploadSink(directory: string): Promise<Baseline> {
  const uws = loadUws();
  if (!uws) throw new Error('uWebSockets.js cannot load on this Node.js');
  const store = await openFilesystemBlobStore({ root: join(directory, 'store') });
  let files = 0;
  const app = uws.App().any('/store', (res) => {
    const body = new PushedBody(res);
    res.onAborted(() => body.abort());
    void store.put(body, { maxBytes: Infinity }).then(
      async (blob) => {
        if (body.aborted) return;
        res.cork(() => res.writeStatus('201 Created').end('{"saved":true}'));
        // Off the clock, as the other sink's files are: the next run must not find it there.
        await store.delete(blob.sha256);
      },
      () => {
        if (!body.aborted) res.cork(() => res.writeStatus('500 Internal Server Error').end());
      },
    );
  });
  app.any('/*', (res, req) => {
    const durable = req.getUrl() === '/durable';
    const hash = durable ? createHash('sha256') : null;
    const file = createWriteStream(join(directory, `sink-${++files}`), { flush: durable });
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
      file.destroy();
    });
    let paused = false;
    res.onData((chunk, isLast) => {
      // The ArrayBuffer is emptied after this callback: copy it.
      const bytes = Buffer.from(chunk.slice(0));
      hash?.update(bytes);
      if (!file.write(bytes) && !paused) {
        paused = true;
        res.pause();
        file.once('drain', () => {
          paused = false;
          if (!aborted) res.resume();
        });
      }
      if (isLast) {
        hash?.digest('hex');
        // 'close' comes after the fsync that `flush` asks for ('finish' comes before it).
        file.once('close', () => {
          if (!aborted) {
            if (paused) res.resume();
            res.cork(() => res.writeStatus('201 Created').end('{"saved":true}'));
          }
          // Only the writing is measured (removing the file after the answer, off the clock);
          // the next run must not find the disk fuller.
          void rm(file.path, { force: true });
        });
        file.end();
      }
    });
  });
  const socket = await new Promise<uWS.us_listen_socket>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (listen) =>
      listen ? resolve(listen) : reject(new Error('raw uWS sink cannot listen')),
    ),
  );
  return {
    baseUrl: `http://127.0.0.1:${uws.us_socket_local_port(socket)}`,
    async close() {
      uws.us_listen_socket_close(socket);
    },
  };
}

/**
 * A uWS request body as the blob store reads it: the chunks copied as they arrive, the socket
 * paused while more than a few wait to be read.
 */
class PushedBody implements AsyncIterable<Uint8Array> {
  aborted = false;
  private readonly chunks: Buffer[] = [];
  private ended = false;
  private paused = false;
  private wake: (() => void) | null = null;

  constructor(private readonly res: uWS.HttpResponse) {
    res.onData((chunk, isLast) => {
      this.chunks.push(Buffer.from(chunk.slice(0)));
      if (isLast) this.ended = true;
      if (this.chunks.length >= 4 && !this.paused) {
        this.paused = true;
        res.pause();
      }
      this.wake?.();
    });
  }

  abort(): void {
    this.aborted = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      const chunk = this.chunks.shift();
      if (chunk) {
        if (this.paused && this.chunks.length < 2 && !this.aborted) {
          this.paused = false;
          this.res.resume();
        }
        yield chunk;
        continue;
      }
      if (this.ended) return;
      if (this.aborted) throw new Error('the client went away');
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = null;
    }
  }
}

/** Writes a file of `bytes` through the same streaming source, for the copy baselines. */
async function writeSource(path: string, bytes: number): Promise<void> {
  const out = createWriteStream(path);
  let sent = 0;
  await pipeline(
    (async function* () {
      while (sent < bytes) {
        const length = Math.min(pattern.length, bytes - sent);
        sent += length;
        yield length === pattern.length ? pattern : pattern.subarray(0, length);
      }
    })(),
    out,
  );
}

/**
 * PUT and GET of 1 MiB and 100 MiB files through the service (uWS engine), beside a raw uWS
 * upload sink and a plain file copy on the same disk, all in this process. The service and the
 * sink take turns run by run, so load that comes and goes weighs on both alike.
 */
export async function measureFiles(
  signal: AbortSignal,
  log: (line: string) => void,
  serverLog: (message: string) => void,
): Promise<FileBench> {
  const directory = mkdtempSync(join(tmpdir(), 'agent-service-bench-files-'));
  onTestsEnd(async () => rmSync(directory, { recursive: true, force: true }));
  const figures = new Figures();
  let firstLargePut: FileBench['firstLargePut'];
  let fewestSamples = Infinity;
  let statementsPerSave: FileBench['statementsPerSave'];
  const sampled = async <T>(run: () => Promise<T>) => {
    const result = await withPeakRss(run);
    fewestSamples = Math.min(fewestSamples, result.samples);
    return result;
  };
  const server = await startBenchServer({
    httpEngine: 'uws',
    log: serverLog,
    // Every run saves a new version; keep the quota out of the way.
    storageQuotaBytes: 1024 ** 4,
  });
  const sink = await startRawUploadSink(directory);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const owner = await server.signUp('bench files');
    const auth = { authorization: `Bearer ${owner.api_token}` };
    const created = await server.post('/workspaces', { visibility: 'private' }, owner.api_token);
    if (created.status !== 201)
      throw new Error(`POST /workspaces answered ${created.status}: ${await created.text()}`);
    const { workspace_id: workspace } = (await created.json()) as { workspace_id: string };
    const fileUrl = (name: string) => server.url(`/workspaces/${workspace}/files/bench/${name}`);

    const servicePut = async (name: string, bytes: number) => {
      const answer = await exchange(agent, fileUrl(name), 'PUT', auth, bytes);
      if (answer.status !== 201)
        throw new Error(`PUT of ${bytes} bytes answered ${answer.status}: ${answer.body}`);
    };
    const serviceGet = async (name: string, bytes: number) => {
      const answer = await exchange(agent, fileUrl(name), 'GET', auth, 0);
      if (answer.status !== 200 || answer.bytes !== bytes)
        throw new Error(`GET answered ${answer.status} with ${answer.bytes} of ${bytes} bytes`);
    };
    const sinkPut = async (bytes: number, route = '/upload') => {
      const answer = await exchange(agent, `${sink.baseUrl}${route}`, 'PUT', {}, bytes);
      if (answer.status !== 201) throw new Error(`raw sink answered ${answer.status}`);
    };

    const sizes = [
      { bytes: SMALL, label: '1 MiB', runs: SMALL_RUNS, name: 'one-mib.bin' },
      { bytes: LARGE, label: '100 MiB', runs: LARGE_RUNS, name: 'hundred-mib.bin' },
    ];
    for (const { bytes, label, runs, name } of sizes) {
      // One untimed round warms the paths (JIT, first blob directory, page cache).
      const large = bytes === LARGE;
      if (large) {
        const service = await sampled(() => servicePut(name, bytes));
        const raw = await sampled(() => sinkPut(bytes));
        firstLargePut = { serviceMb: service.extraMb, sinkMb: raw.extraMb };
      } else {
        await servicePut(name, bytes);
        await sinkPut(bytes);
      }
      await sinkPut(bytes, '/durable');
      await sinkPut(bytes, '/store');
      await serviceGet(name, bytes);
      for (let run = 0; run < runs && !signal.aborted; run++) {
        if (large) {
          const put = await sampled(() => timed(bytes, () => servicePut(name, bytes)));
          figures.add(`service PUT (uWS)`, bytes, put.value, put.extraMb);
          const raw = await sampled(() => timed(bytes, () => sinkPut(bytes)));
          figures.add('raw uWS upload sink PUT (baseline)', bytes, raw.value, raw.extraMb);
          const durable = await sampled(() => timed(bytes, () => sinkPut(bytes, '/durable')));
          figures.add(DURABLE_SINK, bytes, durable.value, durable.extraMb);
          figures.add(STORE_SINK, bytes, await timed(bytes, () => sinkPut(bytes, '/store')));
        } else {
          figures.add(
            'service PUT (uWS)',
            bytes,
            await timed(bytes, () => servicePut(name, bytes)),
          );
          figures.add(
            'raw uWS upload sink PUT (baseline)',
            bytes,
            await timed(bytes, () => sinkPut(bytes)),
          );
          figures.add(DURABLE_SINK, bytes, await timed(bytes, () => sinkPut(bytes, '/durable')));
          figures.add(STORE_SINK, bytes, await timed(bytes, () => sinkPut(bytes, '/store')));
        }
        figures.add('service GET (uWS)', bytes, await timed(bytes, () => serviceGet(name, bytes)));
      }
      log(`files: ${label} done`);
      if (!large) {
        const counts = [];
        for (let run = 0; run < STATEMENT_RUNS; run++) {
          counts.push(await countStatements(server.services.driver, () => servicePut(name, bytes)));
        }
        statementsPerSave = {
          statements: median(counts.map((count) => count.statements)),
          transactions: median(counts.map((count) => count.transactions)),
        };
      }

      const source = join(directory, `source-${bytes}`);
      await writeSource(source, bytes);
      for (let run = 0; run < runs && !signal.aborted; run++) {
        const target = join(directory, `copy-${bytes}-${run}`);
        figures.add(
          'raw file copy, stream pipeline (baseline)',
          bytes,
          await timed(bytes, () => pipeline(createReadStream(source), createWriteStream(target))),
        );
        rmSync(target, { force: true });
        figures.add(
          'raw file copy, fs.copyFile (baseline)',
          bytes,
          await timed(bytes, () => copyFile(source, target)),
        );
        rmSync(target, { force: true });
      }
    }
    return {
      figures: figures.list(),
      ...(firstLargePut ? { firstLargePut } : {}),
      ...(Number.isFinite(fewestSamples) ? { fewestRssSamples: fewestSamples } : {}),
      ...(statementsPerSave ? { statementsPerSave } : {}),
    };
  } finally {
    agent.destroy();
    await sink.close();
    await server.close();
    rmSync(directory, { recursive: true, force: true });
  }
}
