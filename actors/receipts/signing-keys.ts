import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  scryptSync,
  type KeyObject,
} from 'node:crypto';
import type { Driver, Queryable } from '../../storage/driver.ts';
import {
  findCurrentSigningKey,
  insertSigningKey,
  listSigningKeys,
  lockSigningKeys,
  retireCurrentSigningKey,
  sealSigningKey,
  type SigningKeyRow,
} from '../../storage/receipts/signing-keys.ts';
import { realClock, type Clock } from '../kernel/clock.ts';

/**
 * The service's Ed25519 receipt-signing keys (protocol/documents/protocol.md, "Files").
 *
 * A key pair is made at first start and kept in the database (storage/receipts/signing-keys.ts), so
 * every process on one database signs with the same key and a restart keeps it. One key is
 * current; rotation retires it but keeps it, and the JWKS lists every key, so receipts signed
 * by a retired key keep verifying.
 *
 * `kid`: base64url (no padding) of the first 16 bytes of the SHA-256 of the raw 32-byte public
 * key. Like RFC 7638's thumbprint it is derived from the key alone, so anyone can check that a
 * JWK's `kid` belongs to its `x`; unlike RFC 7638 it hashes the raw key, not a JSON member set.
 *
 * What protects the private key: without a secret, only the database's own access control:
 * whoever can read `signing_keys` (or a backup of it) can sign receipts as the service. That
 * is acceptable for development and a single trusted host. A production deployment sets
 * `secret` (the RECEIPT_KEY_SECRET environment variable: 32 random bytes, e.g.
 * `openssl rand -base64 32`, kept out of the database and its backups): new private keys are
 * then stored encrypted under it (AES-256-GCM with a key derived by scrypt, the kid as
 * associated data), and a stolen database alone signs nothing. Keys stored before the secret
 * was set are sealed at the next start with it (copies in older backups stay plain: rotate
 * too if those may have leaked). Better still is a KMS/HSM that
 * signs without ever handing out the key; this class is the seam where that would go.
 */
export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  createdAt: Date;
  retiredAt: Date | null;
}

/** A public key as the JWKS at GET /.well-known/service-keys.json lists it. */
export interface Jwk {
  kty: 'OKP';
  crv: 'Ed25519';
  /** base64url (no padding) of the raw 32-byte public key. */
  x: string;
  kid: string;
  use: 'sig';
}

export interface Jwks {
  keys: Jwk[];
}

/** The kid of a raw Ed25519 public key (see above). */
export function kidOf(rawPublicKey: Uint8Array): string {
  return createHash('sha256').update(rawPublicKey).digest().subarray(0, 16).toString('base64url');
}

export function rawPublicKey(publicKey: KeyObject): Buffer {
  const { x } = publicKey.export({ format: 'jwk' });
  return Buffer.from(x as string, 'base64url');
}

export function jwkOf(row: Pick<SigningKeyRow, 'kid' | 'publicKey'>): Jwk {
  return {
    kty: 'OKP',
    crv: 'Ed25519',
    x: Buffer.from(row.publicKey).toString('base64url'),
    kid: row.kid,
    use: 'sig',
  };
}

export interface SigningKeysOptions {
  /** RECEIPT_KEY_SECRET: when set, private keys are stored encrypted under it. */
  secret?: string | undefined;
  clock?: Clock;
  /**
   * How long the current key is trusted from memory before the database is asked again, so
   * that a rotation by another process on the same database is picked up within this time.
   * Receipts signed meanwhile by the just-retired key still verify (it stays in the JWKS).
   */
  refreshMs?: number;
}

const MIN_SECRET_LENGTH = 16;

export class SigningKeys {
  readonly #secret: string | undefined;
  readonly #clock: Clock;
  readonly #refreshMs: number;
  /** Parsed (and unsealed) keys by kid: unsealing costs a scrypt, so it happens once. */
  readonly #parsed = new Map<string, SigningKey>();
  #current: { key: SigningKey; checkedAt: number } | null = null;

  constructor(options: SigningKeysOptions = {}) {
    if (options.secret !== undefined && options.secret.length < MIN_SECRET_LENGTH) {
      throw new Error(
        `RECEIPT_KEY_SECRET must be at least ${MIN_SECRET_LENGTH} characters (use 32 random bytes)`,
      );
    }
    this.#secret = options.secret;
    this.#clock = options.clock ?? realClock;
    this.#refreshMs = options.refreshMs ?? 60_000;
  }

  /**
   * At start-up: the current key, made (once, whichever process gets there first) if none.
   * With a secret, keys stored unsealed (before the secret was set) are sealed now.
   */
  async start(driver: Driver): Promise<SigningKey> {
    const row = await driver.transaction(async (tx) => {
      await lockSigningKeys(tx);
      if (this.#secret !== undefined) {
        for (const stored of await listSigningKeys(tx)) {
          if (!stored.sealed) {
            await sealSigningKey(
              tx,
              stored.kid,
              this.#seal(Buffer.from(stored.privateKey), stored.kid),
            );
          }
        }
      }
      return (await findCurrentSigningKey(tx)) ?? insertSigningKey(tx, this.#newKeyRow());
    });
    return this.#remember(row);
  }

  /**
   * The key to sign with now. Answers from memory; asks `db` (a command's transaction, say)
   * only when its memory is older than `refreshMs`. Throws when the database has no current
   * key: `start` makes one.
   */
  async current(db: Queryable): Promise<SigningKey> {
    const now = this.#clock.now();
    if (this.#current && now - this.#current.checkedAt < this.#refreshMs) {
      return this.#current.key;
    }
    const row = await findCurrentSigningKey(db);
    if (!row) throw new Error('no current receipt-signing key: SigningKeys.start was not called');
    return this.#remember(row);
  }

  /** Retires the current key (kept for verification) and makes a new current one. */
  async rotate(driver: Driver): Promise<SigningKey> {
    const { retired, fresh } = await driver.transaction(async (tx) => {
      await lockSigningKeys(tx);
      const retired = await retireCurrentSigningKey(tx);
      return { retired, fresh: await insertSigningKey(tx, this.#newKeyRow()) };
    });
    const old = retired && this.#parsed.get(retired.kid);
    if (old) old.retiredAt = retired.retiredAt;
    return this.#remember(fresh);
  }

  /** Every key, retired ones included: what GET /.well-known/service-keys.json serves. */
  async jwks(db: Queryable): Promise<Jwks> {
    return { keys: (await listSigningKeys(db)).map(jwkOf) };
  }

  #remember(row: SigningKeyRow): SigningKey {
    let key = this.#parsed.get(row.kid);
    if (!key) {
      const publicKey = createPublicKey({
        key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(row.publicKey).toString('base64url') },
        format: 'jwk',
      });
      const der = row.sealed ? this.#unseal(row.privateKey, row.kid) : Buffer.from(row.privateKey);
      const privateKey = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
      // A private key that does not match its public key would sign receipts nobody can check.
      if (!rawPublicKey(createPublicKey(privateKey)).equals(Buffer.from(row.publicKey))) {
        throw new Error(`signing key ${row.kid}: the private key does not match the public key`);
      }
      key = { kid: row.kid, privateKey, publicKey, createdAt: row.createdAt, retiredAt: null };
      this.#parsed.set(row.kid, key);
    }
    key.retiredAt = row.retiredAt;
    if (row.retiredAt === null) this.#current = { key, checkedAt: this.#clock.now() };
    return key;
  }

  #newKeyRow() {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const raw = rawPublicKey(publicKey);
    const kid = kidOf(raw);
    const der = privateKey.export({ format: 'der', type: 'pkcs8' });
    const sealed = this.#secret !== undefined;
    return { kid, publicKey: raw, privateKey: sealed ? this.#seal(der, kid) : der, sealed };
  }

  // Sealed form: version (1 byte) | scrypt salt (16) | GCM IV (12) | GCM tag (16) | ciphertext.
  #seal(der: Buffer, kid: string): Buffer {
    const salt = randomBytes(16);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#keyFor(salt), iv);
    cipher.setAAD(Buffer.from(kid, 'utf8'));
    const body = Buffer.concat([cipher.update(der), cipher.final()]);
    return Buffer.concat([Buffer.from([SEALED_V1]), salt, iv, cipher.getAuthTag(), body]);
  }

  #unseal(sealed: Uint8Array, kid: string): Buffer {
    if (this.#secret === undefined) {
      throw new Error(`signing key ${kid} is sealed: RECEIPT_KEY_SECRET is needed to use it`);
    }
    const bytes = Buffer.from(sealed);
    if (bytes[0] !== SEALED_V1 || bytes.length < 45) {
      throw new Error(`signing key ${kid}: unknown sealed form`);
    }
    const decipher = createDecipheriv(
      'aes-256-gcm',
      this.#keyFor(bytes.subarray(1, 17)),
      bytes.subarray(17, 29),
    );
    decipher.setAAD(Buffer.from(kid, 'utf8'));
    decipher.setAuthTag(bytes.subarray(29, 45));
    try {
      return Buffer.concat([decipher.update(bytes.subarray(45)), decipher.final()]);
    } catch {
      throw new Error(`signing key ${kid}: RECEIPT_KEY_SECRET does not open it (wrong secret?)`);
    }
  }

  #keyFor(salt: Uint8Array): Buffer {
    return scryptSync(this.#secret as string, salt, 32, { N: 2 ** 14, r: 8, p: 1 });
  }
}

const SEALED_V1 = 1;
