import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

/**
 * Every request the service sends out, found in the source (issue 32 §2): a receiver that
 * answers 200 and streams for ever must cost a few KiB within one deadline. The service's code
 * (every door, capability and driver) is scanned for each way of reaching out (fetch, node:http
 * and https requests, sockets, DNS, and the libraries that open their own: viem transports,
 * nodemailer, minio, postgres, undici); each site found must be in CLASSIFIED, and every HTTP
 * request must go through actors/kernel/outgoing-request.ts. A new call site fails here until
 * it is routed through the helper or classified with its reason.
 */

const root = join(import.meta.dirname, '../..');
/** The service's own code: what runs in the service process (tests, benches, deploy excluded). */
const SOURCE_FOLDERS = ['actors', 'server', 'storage', 'protocol', 'machines'];
const HELPER = 'actors/kernel/outgoing-request.ts';

/** Each way of reaching out, as it reads in the source. */
const OUTGOING_KINDS: Record<string, RegExp> = {
  fetch: /(?<![.\w])fetch\(/,
  'node:http(s) request':
    /\b(?:https?\.)?(?:request|get)\b[^\n]*from 'node:https?'|\bhttps?\.(?:request|get)\b/,
  'node:net/tls/http2/dgram socket':
    /from 'node:(?:net|tls|http2|dgram)'[^\n]*$|\b(?:net|tls)\.connect\(/m,
  'node:dns look-up': /from 'node:dns(?:\/promises)?'/,
  undici: /from 'undici'|import\('undici'\)/,
  'viem transport':
    /import\s*\{[^}]*\b(?:http|webSocket|fallback|custom|ipc)\b[^}]*\}\s*from\s*'viem[^']*'/,
  'nodemailer transport': /createTransport\(/,
  'minio client': /new Client\(/,
  'postgres connection': /\bpostgres\(/,
  'socket client': /from '(?:socket\.io-client|ws)'/,
};

/** How each site found is bounded: through the helper, or why it needs not be. */
const CLASSIFIED: Record<string, string> = {
  [`${HELPER} node:http(s) request`]: 'the bounded helper itself',
  [`${HELPER} node:net/tls/http2/dgram socket`]: 'a LookupFunction type only',
  'actors/webhooks/post.ts node:net/tls/http2/dgram socket':
    'a LookupFunction type only: the POST goes through boundedRequest',
  'actors/payments/chain/clients.ts viem transport':
    'the chain RPC: http(url, { fetchFn: boundedFetch(...) }), RPC_ANSWER_BYTES within the call timeout',
  'actors/webhooks/address-guard.ts node:dns look-up':
    'getaddrinfo; its wait ends with the attempt deadline (postWebhook withSignal, set_webhook race); an answer is a list of addresses',
  'actors/webhooks/address-guard.ts node:net/tls/http2/dgram socket': 'isIP only',
  'actors/webhooks/special-addresses.ts node:net/tls/http2/dgram socket': 'BlockList and isIP only',
  'server/email/sender-auth.ts node:dns look-up':
    'SPF/DKIM/DMARC look-ups: c-ares, one try of MAIL_DNS_TIMEOUT_MS each, the first time-out fails the rest; a DNS answer is at most 64 KiB by the protocol',
  'actors/email/sender.ts nodemailer transport':
    "the operator's own relay (SMTP_URL), not an untrusted party: nodemailer caps one reply at 1 MiB (maxResponseSize) and idle sockets at socketTimeout",
  'storage/blobs/s3-store.ts minio client':
    "the operator's own blob store (S3_URL): the answers are our own blobs, whose sizes we recorded, read at the reader's pace",
  'storage/blobs/s3-transport.ts node:http(s) request':
    "the minio transport to the operator's own blob store (see s3-store.ts), with a time limit on silence",
  'storage/postgres/driver.ts postgres connection': "the service's own database (DATABASE_URL)",
  'storage/postgres/listener.ts postgres connection': "the service's own database (DATABASE_URL)",
  'actors/payments/pay/page-script.ts fetch':
    "script text served to the payer's browser: it runs there, never in the service",
  'server/http/node-engine.ts node:net/tls/http2/dgram socket': 'AddressInfo type only',
  'server/http/uws-engine.ts node:net/tls/http2/dgram socket':
    'createServer only: a listen uWS refused is tried once on node:net to learn why (a local listen, no request)',
  'server/http/client-address.ts node:net/tls/http2/dgram socket': 'BlockList and isIP only',
  'server/email/door.ts node:net/tls/http2/dgram socket': 'AddressInfo type only',
  'server/config.ts node:net/tls/http2/dgram socket': 'BlockList type only',
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(?:ts|js|mjs|cjs)$/.test(name) ? [path] : [];
  });
}

/** Every `file kind` whose way of reaching out appears in the service's code. */
function outgoingSites(): string[] {
  const sites: string[] = [];
  for (const folder of SOURCE_FOLDERS) {
    for (const path of sourceFiles(join(root, folder))) {
      // Comments are prose: a sentence naming fetch( is no call.
      const code = readFileSync(path, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/^\s*\/\/.*$/gm, '');
      for (const [kind, pattern] of Object.entries(OUTGOING_KINDS)) {
        if (pattern.test(code)) sites.push(`${relative(root, path)} ${kind}`);
      }
    }
  }
  return sites.sort();
}

const test = suite('every outgoing request of the service is bounded');

test('every way the service reaches out is classified, and no classification is stale', () => {
  const sites = outgoingSites();
  const unclassified = sites.filter((site) => !(site in CLASSIFIED));
  assert.equal(
    unclassified,
    [],
    `route these through ${HELPER} (boundedRequest / boundedFetch) or classify them here`,
  );
  const stale = Object.keys(CLASSIFIED).filter((site) => !sites.includes(site));
  assert.equal(stale, [], 'these sites are gone: remove their rows');
});

test('only the helper sends an HTTP request with node:http, node:https or fetch', () => {
  const senders = outgoingSites().filter((site) => {
    const [file] = site.split(' ');
    if (file === HELPER || !/ (fetch|node:http\(s\) request)$/.test(site)) return false;
    const code = readFileSync(join(root, file as string), 'utf8');
    // A request function used as a value (not a type, not an Agent), or fetch( outside the
    // served browser script.
    return (
      /(?<!typeof )\b(?:httpRequest|httpsRequest|https?\.request|https?\.get)\b/.test(code) ||
      (/(?<![.\w])fetch\(/.test(code) && !file?.endsWith('page-script.ts'))
    );
  });
  assert.equal(senders, ['storage/blobs/s3-transport.ts node:http(s) request']);
});

test('every viem transport is given the bounded fetch, and every webhook POST goes through the helper', () => {
  for (const site of outgoingSites().filter((s) => s.endsWith(' viem transport'))) {
    const code = readFileSync(join(root, site.split(' ')[0] as string), 'utf8');
    const transports = [
      ...code.matchAll(/\b(?:http|webSocket|fallback|custom)\(\s*[\w.]+\s*(?:,|\))/g),
    ];
    assert.ok(transports.length > 0, site);
    for (const match of transports) {
      const call = code.slice(match.index, match.index + 300);
      assert.match(call, /^http\(\s*\w+\s*,\s*\{\s*fetchFn:\s*boundedFetch\(/, `${site}: ${call}`);
    }
  }
  const post = readFileSync(join(root, 'actors/webhooks/post.ts'), 'utf8');
  assert.match(post, /await boundedRequest\(/);
});

test.run();
