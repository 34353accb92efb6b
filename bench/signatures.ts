/**
 * Signed requests (RFC 9421, Ed25519; issue 39): GET /whoami with a Bearer token beside the same
 * request signed and carrying no token, on one started service (uWS engine, PGlite), with the
 * same load generator, connections and duration as the throughput section (whoami.ts), and the
 * raw uWS baseline of the same run beside them. The two lanes take turns, A B B A, so a machine
 * whose load drifts weighs on both alike; each lane's CPU per request is pooled over its rounds.
 *
 * The signed lane sends one signature, made (by http-message-signatures, not the service's code)
 * just before each of its rounds, so `created` is seconds old, and with no nonce: a signature
 * without a nonce may be sent again within the window, and the service verifies it in full each
 * time (the key comes from its cache). The load generator sends fixed headers either way, so it
 * does no more work for the signed lane than for the token. A nonce would add the nonce's write
 * to the database (claimNonce) to each request; it is not measured here.
 *
 * The cost of one verification, printed beside: node:crypto's Ed25519 verify alone over the
 * lane's own signature base, the service's whole check in-process (parse the headers, rebuild
 * the base, the cached key, verify), and the extra server CPU per request end to end (signed
 * minus token, over HTTP).
 */
import { createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { httpbis } from 'http-message-signatures';
import { requiredComponents } from '../actors/kernel/request-signatures.ts';
import { signatureClaims } from '../protocol/message-signature.ts';
import { startBenchServer } from './bench-server.ts';
import { type TestServer } from '../test/helpers/server.ts';
import { addKey, newKey, type AgentKey } from '../test/helpers/signatures.ts';
import { measureLoad, type LoadResult } from './load.ts';
import { perSecond, table } from './stats.ts';
import { measureRawUws } from './whoami.ts';

/** As whoami.ts: 10 connections, no pipelining, 5 s after a 1 s warm-up. */
const CONNECTIONS = 10;
const SECONDS = 5;
/** Each lane's rounds, in this order: A B B A. */
const ORDER = ['token', 'signed', 'signed', 'token'] as const;
/** Each micro-benchmark runs at least this long, after its warm-up. */
const MICRO_MS = 1_000;
const MICRO_WARM_UP = 2_000;

export type SignatureLane = (typeof ORDER)[number];

export interface SignatureRound {
  lane: SignatureLane;
  round: number;
  result: LoadResult;
}

export interface SignaturesFigure {
  /** Raw uWS hello world of this run: the throughput section's when it ran, else measured here. */
  rawUws: LoadResult | undefined;
  rawUwsMeasuredHere: boolean;
  rounds: SignatureRound[];
  /** The signature base the signed lane sends, in bytes, and its covered components. */
  baseBytes: number;
  covered: string[];
  /** node:crypto Ed25519 verify alone (a cached KeyObject, the lane's base and signature). */
  cryptoVerify: MicroFigure | undefined;
  /** The service's check in-process: signatureClaims, then services.signatures.verify. */
  serviceVerify: MicroFigure | undefined;
  notes: string[];
}

export interface MicroFigure {
  count: number;
  microsecondsEach: number;
}

/** A signed request's headers, and the base the signer signed (captured from the library). */
interface Signed {
  headers: Record<string, string>;
  base: Buffer;
  signature: Buffer;
}

/** GET `url` signed with `key`, no token, no nonce, `created` now. */
async function signGet(key: AgentKey, url: string, covered: string[]): Promise<Signed> {
  const captured: { base?: Buffer; signature?: Buffer } = {};
  const signed = await httpbis.signMessage(
    {
      key: {
        id: key.keyId,
        alg: 'ed25519',
        sign: (data: Buffer) => {
          captured.base = Buffer.from(data);
          captured.signature = sign(null, data, key.privateKey);
          return Promise.resolve(captured.signature);
        },
      },
      name: 'sig1',
      fields: covered,
      params: ['created', 'keyid', 'alg'],
      paramValues: { created: new Date() },
    },
    { method: 'GET', url, headers: {} },
  );
  if (!captured.base || !captured.signature) throw new Error('the signer signed nothing');
  return {
    headers: signed.headers as Record<string, string>,
    base: captured.base,
    signature: captured.signature,
  };
}

/** Runs `once` for a warm-up, then for at least MICRO_MS: microseconds per call. */
async function micro(once: () => unknown): Promise<MicroFigure> {
  for (let i = 0; i < MICRO_WARM_UP; i++) await once();
  let count = 0;
  const started = performance.now();
  let elapsed = 0;
  while (elapsed < MICRO_MS) {
    for (let i = 0; i < 500; i++) await once();
    count += 500;
    elapsed = performance.now() - started;
  }
  return { count, microsecondsEach: (elapsed * 1000) / count };
}

/** Lower-cased header names, as the service's engines hand them on. */
function lowerCased(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]),
  );
}

async function expectWhoami(
  server: TestServer,
  headers: Record<string, string>,
  agentId: string,
  what: string,
): Promise<void> {
  // A refused request would make a fast 401 look like throughput: check one answer first.
  const probe = await fetch(server.url('/whoami'), { headers });
  const text = await probe.text();
  if (probe.status !== 200) throw new Error(`${what} whoami answered ${probe.status}: ${text}`);
  if (!text.includes(agentId)) throw new Error(`${what} whoami answered another agent: ${text}`);
}

export async function measureSignatures(
  rawUws: LoadResult | undefined,
  signal: AbortSignal,
  log: (line: string) => void,
  serverLog: (message: string) => void,
): Promise<SignaturesFigure> {
  const figure: SignaturesFigure = {
    rawUws,
    rawUwsMeasuredHere: false,
    rounds: [],
    baseBytes: 0,
    covered: [],
    cryptoVerify: undefined,
    serviceVerify: undefined,
    notes: [],
  };
  if (!figure.rawUws) {
    log('signatures: raw uWS hello world (the throughput section did not run)');
    figure.rawUws = await measureRawUws(signal);
    figure.rawUwsMeasuredHere = true;
  }
  const server = await startBenchServer({ httpEngine: 'uws', log: serverLog });
  try {
    const agent = await server.signUp('bench signatures');
    const key = newKey();
    await addKey(server, agent.api_token, key);
    const url = server.url('/whoami');
    const target = new URL(url);
    figure.covered = requiredComponents({ query: false, authorization: false, body: false });
    const bearer = { authorization: `Bearer ${agent.api_token}` };
    await expectWhoami(server, bearer, agent.agent_id, 'token');
    let signed = await signGet(key, url, figure.covered);
    await expectWhoami(server, signed.headers, agent.agent_id, 'signed');
    figure.baseBytes = signed.base.length;

    for (const [index, lane] of ORDER.entries()) {
      if (signal.aborted) break;
      const round = ORDER.slice(0, index + 1).filter((l) => l === lane).length;
      // A fresh `created` for each round: seconds old when its requests arrive.
      if (lane === 'signed') signed = await signGet(key, url, figure.covered);
      log(
        `signatures: GET /whoami, ${lane === 'token' ? 'Bearer token' : 'signed, no token'}, round ${round}`,
      );
      const result = await measureLoad(
        {
          url,
          headers: lane === 'token' ? bearer : signed.headers,
          connections: CONNECTIONS,
          seconds: SECONDS,
        },
        signal,
      );
      figure.rounds.push({ lane, round, result });
    }

    // Verify alone: the lane's own base and signature, the key as the service keeps it.
    const publicKey: KeyObject = createPublicKey({ key: key.jwk, format: 'jwk' });
    if (!verify(null, signed.base, publicKey, signed.signature)) {
      throw new Error('the signed base does not verify with its own key');
    }
    figure.cryptoVerify = await micro(() => verify(null, signed.base, publicKey, signed.signature));

    // The service's check, in-process: what the HTTP door does before it reads a body.
    try {
      const headers = { ...lowerCased(signed.headers), host: target.host };
      const message = {
        method: 'GET',
        authority: target.host,
        path: target.pathname,
        query: '',
        headers,
      };
      const once = async () => {
        const claims = signatureClaims(message, () => 'http');
        const proof = claims && (await server.services.signatures.verify(claims, figure.covered));
        if (proof?.agentId !== agent.agent_id) throw new Error('the service did not verify it');
      };
      await once();
      figure.serviceVerify = await micro(once);
    } catch (error) {
      figure.notes.push(
        `signatures: the in-process check was not measured: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    return figure;
  } finally {
    await server.close();
  }
}

/** A lane's rounds pooled: requests, server CPU seconds, and the worst of their figures. */
function pooled(figure: SignaturesFigure, lane: SignatureLane) {
  const rounds = figure.rounds.filter((r) => r.lane === lane).map((r) => r.result);
  if (rounds.length === 0) return undefined;
  const total = rounds.reduce((sum, r) => sum + r.total, 0);
  const cpuSeconds = rounds.reduce(
    (sum, r) => sum + (r.requestsPerCpuSecond > 0 ? r.total / r.requestsPerCpuSecond : 0),
    0,
  );
  return {
    rounds: rounds.length,
    total,
    failures: rounds.reduce((sum, r) => sum + r.failures, 0),
    requestsPerSecond: rounds.reduce((sum, r) => sum + r.requestsPerSecond, 0) / rounds.length,
    requestsPerCpuSecond: cpuSeconds > 0 ? total / cpuSeconds : 0,
    cpuUsPerRequest: total > 0 ? (cpuSeconds * 1e6) / total : 0,
  };
}

const percent = (ratio: number) => `${(ratio * 100).toFixed(1)}%`;
const perCpuSecond = (value: number) => `${Math.round(value).toLocaleString('en-US')} req/CPU-s`;
const microseconds = (value: number) => `${value.toFixed(1)} µs`;

function row(name: string, result: LoadResult | undefined): string[] {
  return [
    name,
    perSecond(result?.requestsPerSecond),
    result ? perCpuSecond(result.requestsPerCpuSecond) : '-',
    result && result.requestsPerCpuSecond > 0
      ? microseconds(1e6 / result.requestsPerCpuSecond)
      : '-',
    result ? `${result.latencyP50Ms} ms` : '-',
    result ? `${result.latencyP99Ms} ms` : '-',
    result ? `${Math.round(result.serverCpuPercent)}%` : '-',
    result ? String(result.failures) : '-',
  ];
}

const LANE_NAMES: Record<SignatureLane, string> = {
  token: 'GET /whoami, Bearer token',
  signed: 'GET /whoami, signed, no token',
};

/** The section of the closing report. */
export function signaturesLines(figure: SignaturesFigure | null): string[] {
  const lines = [
    '',
    'Signed requests (bench/signatures.ts): GET /whoami on one service (uWS engine, PGlite), with a',
    'Bearer token, and signed (RFC 9421, Ed25519, alg="ed25519", created, keyid, no nonce) with no',
    'token; the same load as the throughput table, the lanes taking turns A B B A. The signed lane',
    'sends one signature made just before each round (a signature without a nonce may be sent again',
    'within its 300 s; the service verifies it in full each time), so the load generator sends',
    'fixed headers in both lanes. CPU/req: server CPU-µs per request (1 / per CPU-second).',
  ];
  if (!figure) return [...lines, '(no figures)'];
  lines.push(
    table([
      [
        'target',
        'requests/s',
        'per CPU-second',
        'CPU/req',
        'p50',
        'p99',
        'server CPU',
        'non-2xx/errors',
      ],
      row(
        `raw uWS hello world (baseline${figure.rawUwsMeasuredHere ? ', measured here' : ', throughput section'})`,
        figure.rawUws,
      ),
      ...figure.rounds.map((r) => row(`${LANE_NAMES[r.lane]}, round ${r.round}`, r.result)),
    ]),
    `Signature base of the signed lane: ${figure.baseBytes} bytes, covering ${figure.covered.map((c) => `"${c}"`).join(' ')}.`,
  );
  if (figure.cryptoVerify) {
    lines.push(
      `Ed25519 verify alone (node:crypto verify, a cached KeyObject, that base): ` +
        `${microseconds(figure.cryptoVerify.microsecondsEach)} each, over ${figure.cryptoVerify.count.toLocaleString('en-US')} verifies.`,
    );
  }
  if (figure.serviceVerify) {
    lines.push(
      `The service's check in-process (signatureClaims + services.signatures.verify: parse the headers, ` +
        `rebuild the base, the cached key, verify): ${microseconds(figure.serviceVerify.microsecondsEach)} each, ` +
        `over ${figure.serviceVerify.count.toLocaleString('en-US')} checks.`,
    );
  }
  lines.push(...figure.notes);
  return lines;
}

/** The lines of the report's ratios: both lanes against raw uWS, and what a signature costs. */
export function signaturesRatios(figure: SignaturesFigure | null): string[] {
  const token = figure && pooled(figure, 'token');
  const signed = figure && pooled(figure, 'signed');
  if (!figure || !token || !signed) return ['signed requests: not measured'];
  const raw = figure.rawUws;
  const againstRaw = (lane: { requestsPerCpuSecond: number; requestsPerSecond: number }) =>
    raw
      ? `${percent(lane.requestsPerCpuSecond / raw.requestsPerCpuSecond)} of raw uWS per server CPU-second, ` +
        `${percent(lane.requestsPerSecond / raw.requestsPerSecond)} by throughput`
      : 'no raw uWS measured';
  const extra = signed.cpuUsPerRequest - token.cpuUsPerRequest;
  const micro = [
    figure.cryptoVerify
      ? `Ed25519 verify alone ${microseconds(figure.cryptoVerify.microsecondsEach)}`
      : undefined,
    figure.serviceVerify
      ? `the service's check in-process ${microseconds(figure.serviceVerify.microsecondsEach)}`
      : undefined,
  ].filter((part) => part !== undefined);
  return [
    `GET /whoami with a Bearer token, beside the signed lane (${token.rounds} rounds): ` +
      `${perCpuSecond(token.requestsPerCpuSecond)} (${microseconds(token.cpuUsPerRequest)} CPU/req), ${againstRaw(token)}`,
    `GET /whoami signed, no token (${signed.rounds} rounds): ${perCpuSecond(signed.requestsPerCpuSecond)} ` +
      `(${microseconds(signed.cpuUsPerRequest)} CPU/req), ${againstRaw(signed)}; ` +
      `${percent(signed.requestsPerCpuSecond / token.requestsPerCpuSecond)} of the token lane per CPU-second`,
    `cost of verifying a signature: ${extra >= 0 ? '+' : ''}${microseconds(extra)} server CPU per signed request ` +
      `end to end (signed minus token)${micro.length > 0 ? `; ${micro.join(', ')}` : ''}` +
      (token.failures + signed.failures > 0
        ? `; ${token.failures + signed.failures} requests failed (the figures are suspect)`
        : ''),
  ];
}
