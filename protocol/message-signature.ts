import {
  parseDictionary,
  serializeInnerList,
  serializeItem,
  type InnerList,
  type Item,
} from 'structured-headers';
import { ServiceError } from './errors.ts';

/**
 * HTTP Message Signatures (RFC 9421), the part a verifier needs: read `Signature-Input` and
 * `Signature`, and rebuild each signature's base from the message as it arrived. Pure: the key
 * that verifies, the clock and the nonces are the kernel's (actors/kernel/request-signatures.ts).
 * RFC 8941 parsing is the `structured-headers` library's.
 */

/** The path socket.io listens on, as a handshake's signature covers it (`@path`). */
export const SOCKET_PATH = '/socket.io/';
/**
 * The header a handshake's signature covers with the connection's challenge: engine.io's
 * session id (`socket.io.engine.id` in socket.io-client), made by the server for it.
 */
export const SOCKET_CHALLENGE_HEADER = 'socket-challenge';
/** How far a signature's `created` may be from the service's clock, either way, in seconds. */
export const SIGNATURE_WINDOW_SECONDS = 300;

/** A request as a signature covers it. Header names lower case; the query without `?`. */
export interface SignedMessage {
  readonly method: string;
  /** The Host header as sent (lower-cased here). */
  readonly authority: string;
  /** Percent-encoded as it arrived, without the query. */
  readonly path: string;
  readonly query: string;
  readonly headers: Readonly<Record<string, string | undefined>>;
}

/** Why a signature is refused: the `reason` of `401 invalid_signature`. */
export type SignatureFault =
  | 'malformed'
  | 'component'
  | 'coverage'
  | 'alg'
  | 'created'
  | 'expired'
  | 'nonce'
  | 'nonce_replayed'
  | 'key_revoked'
  | 'agent_mismatch'
  | 'signature'
  | 'content_digest';

export function signatureFault(reason: SignatureFault, detail: string): ServiceError {
  return new ServiceError('invalid_signature', detail, { reason });
}

/** One signature of a message: its label's parameters, and its base built on demand. */
export interface SignatureClaim {
  readonly label: string;
  /** `keyid`, when it is a string. */
  readonly keyId: string | undefined;
  readonly alg: unknown;
  readonly created: unknown;
  readonly expires: unknown;
  readonly nonce: unknown;
  /** The covered components' names (`@method`, `content-digest`), in order. */
  readonly covered: readonly string[];
  /** The signature's bytes; undefined when `Signature` has no byte sequence for the label. */
  readonly signature: Uint8Array | undefined;
  /** The signature base (RFC 9421 section 2.5); throws `invalid_signature` when it cannot be built. */
  base(): string;
}

/** The most signatures (labels) one message may carry here. */
export const MAX_SIGNATURES = 8;

/** The derived components a request signature may cover here. */
const DERIVED = new Set([
  '@method',
  '@authority',
  '@path',
  '@query',
  '@request-target',
  '@target-uri',
  '@scheme',
]);

/**
 * The signatures a message carries, or null when it carries no `Signature-Input`. Each label of
 * `Signature-Input` is one claim; nothing is checked yet but the headers' syntax, so that a
 * signature meant for someone else (another label) costs nothing more.
 */
export function signatureClaims(
  message: SignedMessage,
  scheme: () => string,
): SignatureClaim[] | null {
  const inputHeader = message.headers['signature-input'];
  if (inputHeader === undefined) return null;
  const signatureHeader = message.headers.signature;
  if (signatureHeader === undefined) {
    throw signatureFault(
      'malformed',
      'The request has `Signature-Input` but no `Signature` header.',
    );
  }
  const inputs = parseOrRefuse(inputHeader, 'Signature-Input');
  // Each label may cost a look-up of its key: a request carries a few, not a crowd.
  if (inputs.size > MAX_SIGNATURES) {
    throw signatureFault(
      'malformed',
      `\`Signature-Input\` has ${inputs.size} signatures; at most ${MAX_SIGNATURES} are read.`,
    );
  }
  const signatures = parseOrRefuse(signatureHeader, 'Signature');
  const claims: SignatureClaim[] = [];
  for (const [label, member] of inputs) {
    if (!isInnerList(member)) {
      throw signatureFault(
        'malformed',
        `\`Signature-Input\` member \`${label}\` must be an inner list of components, e.g. ("@method" "@authority" "@path").`,
      );
    }
    const [items, params] = member;
    const sent = signatures.get(label);
    const bytes = sent !== undefined && !isInnerList(sent) ? asBytes((sent as Item)[0]) : undefined;
    const keyId = params.get('keyid');
    claims.push({
      label,
      keyId: typeof keyId === 'string' ? keyId : undefined,
      alg: params.get('alg'),
      created: params.get('created'),
      expires: params.get('expires'),
      nonce: params.get('nonce'),
      covered: items.map((item) => (typeof item[0] === 'string' ? item[0] : '')),
      signature: bytes,
      base: () => signatureBase(message, member, scheme),
    });
  }
  return claims;
}

function parseOrRefuse(value: string, header: string) {
  try {
    return parseDictionary(value);
  } catch (error) {
    throw signatureFault(
      'malformed',
      `\`${header}\` is not an RFC 8941 dictionary: ${(error as Error).message}.`,
    );
  }
}

function isInnerList(member: Item | InnerList): member is InnerList {
  return Array.isArray(member[0]);
}

function asBytes(value: unknown): Uint8Array | undefined {
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value))
    return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  return undefined;
}

/** RFC 9421 section 2.5: one line per covered component, then `@signature-params`. */
function signatureBase(message: SignedMessage, input: InnerList, scheme: () => string): string {
  const [items] = input;
  const seen = new Set<string>();
  let base = '';
  for (const item of items) {
    const [name, params] = item;
    if (typeof name !== 'string') {
      throw signatureFault('component', 'Each covered component is a string, e.g. "@method".');
    }
    if (params.size > 0) {
      throw signatureFault(
        'component',
        `The component "${name}" has parameters (${[...params.keys()].join(', ')}); none are taken here.`,
      );
    }
    if (name !== name.toLowerCase()) {
      throw signatureFault('component', `Component names are lower case: "${name}".`);
    }
    if (seen.has(name)) {
      throw signatureFault('component', `The component "${name}" is covered twice.`);
    }
    seen.add(name);
    base += `${serializeItem(item)}: ${componentValue(message, name, scheme)}\n`;
  }
  return `${base}"@signature-params": ${serializeInnerList(input)}`;
}

function componentValue(message: SignedMessage, name: string, scheme: () => string): string {
  if (name.startsWith('@')) {
    if (!DERIVED.has(name)) {
      throw signatureFault(
        'component',
        `The derived component "${name}" is not taken here; cover ${[...DERIVED].join(', ')} or header fields.`,
      );
    }
    const query = message.query === '' ? '' : `?${message.query}`;
    switch (name) {
      case '@method':
        return message.method;
      case '@authority':
        return message.authority.toLowerCase();
      case '@path':
        return message.path === '' ? '/' : message.path;
      case '@query':
        return `?${message.query}`;
      case '@request-target':
        return `${message.path}${query}`;
      case '@scheme':
        return scheme();
      default:
        return `${scheme()}://${message.authority.toLowerCase()}${message.path}${query}`;
    }
  }
  const value = message.headers[name];
  if (value === undefined) {
    throw signatureFault(
      'component',
      `The signature covers the header "${name}", which the request does not carry.`,
    );
  }
  // RFC 9421 section 2.1: leading and trailing whitespace trimmed; obsolete line folding is
  // refused by the HTTP parser before this.
  return value.trim();
}

/** What a body must hash to: the `sha-256` member of `Content-Digest` (RFC 9530). */
export interface ContentDigest {
  readonly sha256: Uint8Array;
}

/** The `Content-Digest` a signed request carries, or a refusal that says what is wrong. */
export function contentDigestOf(
  headers: Readonly<Record<string, string | undefined>>,
): ContentDigest {
  const value = headers['content-digest'];
  if (value === undefined) {
    throw signatureFault(
      'coverage',
      'A signed request with a body carries `Content-Digest` (RFC 9530, `sha-256=:<base64>:`) and covers it.',
    );
  }
  let parsed;
  try {
    parsed = parseDictionary(value);
  } catch {
    throw signatureFault(
      'content_digest',
      '`Content-Digest` is not an RFC 8941 dictionary: send `sha-256=:<base64 of the body\u2019s SHA-256>:`.',
    );
  }
  const member = parsed.get('sha-256');
  const bytes = member && !isInnerList(member) ? asBytes(member[0]) : undefined;
  if (bytes?.length !== 32) {
    throw signatureFault(
      'content_digest',
      '`Content-Digest` has no `sha-256` member of 32 bytes: send `sha-256=:<base64 of the body\u2019s SHA-256>:`.',
    );
  }
  return { sha256: bytes };
}

export function refuseDigestMismatch(): ServiceError {
  return signatureFault(
    'content_digest',
    'The body does not hash to its `Content-Digest` (sha-256): it changed on the way, or the digest was made of other bytes.',
  );
}
