import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { canonicalJson } from '../../protocol/jcs.ts';
import type { Queryable } from '../../storage/driver.ts';
import type { Jwk, Jwks, SigningKey, SigningKeys } from './signing-keys.ts';

/**
 * Signed, chained receipts (protocol/documents/protocol.md, "Files"). Every receipt the service
 * issues (file saves and deletes, agreements, deliveries, ratings, payments) goes through
 * `signReceipt`, so that a party can prove it later without trusting the service's database:
 *
 * - `signature`: base64url (no padding) Ed25519 signature over the RFC 8785 (JCS) canonical
 *   JSON of the receipt without its `signature` member;
 * - `prev_hash`: hex SHA-256 of the JCS of the previous receipt of the same workspace,
 *   signature included; null for a workspace's first receipt;
 * - `kid`: the signing key's id, found in the JWKS (actors/receipts/signing-keys.ts).
 *
 * Pure functions of their input (but `issueReceipt`, which looks up the current key): the
 * chain itself, which reads the previous receipt under the workspace's row lock and stores the
 * new one in the same transaction, is `appendReceipt` (./chain.ts).
 */

/** The members signReceipt adds; an unsigned receipt must not bring its own. */
const SIGNATURE_MEMBERS = ['kid', 'prev_hash', 'signature'] as const;

/** A receipt's own content: any JSON object without the members signing adds. */
export type UnsignedReceipt = object;

export type Signed<T extends UnsignedReceipt> = T & {
  kid: string;
  prev_hash: string | null;
  signature: string;
};

/** Any signed receipt, whatever it records. */
export type SignedReceipt = Signed<Record<string, unknown>>;

/** The receipt of a file save or delete (protocol.md, "Files"). A type: it is a record. */
export type FileReceiptContent = {
  receipt_id: string;
  workspace_id: string;
  path: string;
  action: 'save' | 'delete';
  version: number;
  size: number;
  sha256: string;
  agent_id: string;
  agent_name: string;
  /** ISO 8601 time, as a string: a Date is not JSON and JCS refuses it. */
  saved_at: string;
};

export type FileReceipt = Signed<FileReceiptContent>;

/** The `prev_hash` a receipt following `receipt` carries. */
export function receiptHash(receipt: SignedReceipt): string {
  return createHash('sha256').update(canonicalJson(receipt), 'utf8').digest('hex');
}

/** Adds `kid`, `prev_hash` and `signature` to `unsigned`, chaining it after `previous`. */
export function signReceipt<T extends UnsignedReceipt>(
  unsigned: T,
  previous: SignedReceipt | null,
  key: Pick<SigningKey, 'kid' | 'privateKey'>,
): Signed<T> {
  for (const member of SIGNATURE_MEMBERS) {
    if (Object.hasOwn(unsigned, member)) {
      throw new Error(`an unsigned receipt may not hold "${member}": signing sets it`);
    }
  }
  const body = {
    ...unsigned,
    kid: key.kid,
    prev_hash: previous ? receiptHash(previous) : null,
  };
  const signature = sign(null, Buffer.from(canonicalJson(body), 'utf8'), key.privateKey);
  return { ...body, signature: signature.toString('base64url') } as Signed<T>;
}

/**
 * Signs `unsigned` after `previous` (the workspace's newest receipt, read under its lock in the
 * same transaction: ./chain.ts) with the current key, looked up through `tx` only when the
 * in-memory one is due for a check.
 */
export async function issueReceipt<T extends UnsignedReceipt>(
  tx: Queryable,
  keys: SigningKeys,
  unsigned: T,
  previous: SignedReceipt | null,
): Promise<Signed<T>> {
  return signReceipt(unsigned, previous, await keys.current(tx));
}

export type ReceiptVerdict =
  | { ok: true }
  | {
      ok: false;
      /**
       * malformed: not an object with a string kid, a prev_hash (hex SHA-256 or null) and a
       * base64url signature; unknown_key: no Ed25519 key of that kid in the JWKS;
       * bad_signature: the signature does not match the content.
       */
      reason: 'malformed' | 'unknown_key' | 'bad_signature';
    };

// 64 bytes of signature are 86 base64url characters without padding; the last one carries
// only 2 bits, so only these letters are canonical there.
const SIGNATURE_SHAPE = /^[A-Za-z0-9_-]{85}[AQgw]$/;
const HASH_SHAPE = /^[0-9a-f]{64}$/;

/** Whether `receipt` was signed by a key of `jwks` and not changed since. */
export function verifyReceipt(receipt: unknown, jwks: Jwks): ReceiptVerdict {
  if (!isReceipt(receipt)) return { ok: false, reason: 'malformed' };
  const jwk = jwks.keys.find(
    (candidate) =>
      candidate.kid === receipt.kid && candidate.kty === 'OKP' && candidate.crv === 'Ed25519',
  );
  if (!jwk) return { ok: false, reason: 'unknown_key' };
  const { signature, ...body } = receipt;
  let content: string;
  try {
    content = canonicalJson(body);
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  const publicKey = publicKeyOf(jwk);
  if (!publicKey) return { ok: false, reason: 'unknown_key' };
  const good = verify(
    null,
    Buffer.from(content, 'utf8'),
    publicKey,
    Buffer.from(signature, 'base64url'),
  );
  return good ? { ok: true } : { ok: false, reason: 'bad_signature' };
}

export type ChainVerdict =
  | { ok: true }
  | {
      ok: false;
      /** Which receipt (index into the list given) fails. */
      index: number;
      /**
       * Besides a receipt's own: broken_chain: its prev_hash is not the hash of the receipt
       * before it (one removed, inserted or reordered); mixed_workspaces: it belongs to
       * another workspace than the first.
       */
      reason:
        Extract<ReceiptVerdict, { ok: false }>['reason'] | 'broken_chain' | 'mixed_workspaces';
    };

/**
 * Whether `receipts`, oldest first (GET .../receipts lists newest first: reverse it), are
 * each valid and form one unbroken chain. The chain starts at the workspace's first receipt
 * (prev_hash null) unless `after` gives the receipt just before the first one listed.
 * A chain cut short at its newest end cannot be told from a complete one: whoever holds a
 * later receipt can tell, since it names its predecessor.
 */
export function verifyChain(
  receipts: readonly unknown[],
  jwks: Jwks,
  options: { after?: SignedReceipt | null } = {},
): ChainVerdict {
  let expectedPrev = options.after ? receiptHash(options.after) : null;
  let workspace: unknown = options.after?.workspace_id;
  for (const [index, receipt] of receipts.entries()) {
    const verdict = verifyReceipt(receipt, jwks);
    if (!verdict.ok) return { ok: false, index, reason: verdict.reason };
    const signed = receipt as SignedReceipt;
    if (index === 0 && !options.after) workspace = signed.workspace_id;
    if (signed.workspace_id !== workspace) return { ok: false, index, reason: 'mixed_workspaces' };
    if (signed.prev_hash !== expectedPrev) return { ok: false, index, reason: 'broken_chain' };
    expectedPrev = receiptHash(signed);
  }
  return { ok: true };
}

function isReceipt(value: unknown): value is SignedReceipt {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { kid, prev_hash, signature } = value as Record<string, unknown>;
  return (
    typeof kid === 'string' &&
    (prev_hash === null || (typeof prev_hash === 'string' && HASH_SHAPE.test(prev_hash))) &&
    typeof signature === 'string' &&
    SIGNATURE_SHAPE.test(signature)
  );
}

// Parsing a JWK costs more than checking a signature, and a JWKS has few keys that never
// change; the bound only keeps a stream of foreign JWKS from growing it without end.
const publicKeys = new Map<string, KeyObject>();
const MAX_CACHED_KEYS = 256;

/** The key a JWK describes; undefined when its `x` is not an Ed25519 public key. */
function publicKeyOf(jwk: Jwk): KeyObject | undefined {
  let key = publicKeys.get(jwk.x);
  if (!key) {
    try {
      key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
    } catch {
      return undefined;
    }
    if (publicKeys.size >= MAX_CACHED_KEYS) publicKeys.clear();
    publicKeys.set(jwk.x, key);
  }
  return key;
}
