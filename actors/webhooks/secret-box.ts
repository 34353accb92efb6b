import { createCipheriv, createDecipheriv, hkdfSync, randomBytes, scryptSync } from 'node:crypto';
import type { Queryable } from '../../storage/driver.ts';
import { ensureServiceSecret } from '../../storage/kernel/service-secrets.ts';

/** The row of `service_secrets` the webhook secrets' key is derived from. */
const SECRET_NAME = 'webhook-secrets';

/**
 * Keeps webhook secrets encrypted at rest (they must be read back to sign, so they cannot be
 * hashed like tokens): AES-256-GCM, the agent's id as associated data (a cipher moved to another
 * row does not open). The key comes from a random secret kept in `service_secrets` (so every
 * process on one database opens every cipher) and, when RECEIPT_KEY_SECRET is set, from it too,
 * as the receipt keys are sealed: a stolen database alone then opens nothing. Each cipher says
 * which key sealed it (`v1d` database only, `v1s` with RECEIPT_KEY_SECRET), so setting the
 * secret later keeps older ciphers readable; new ones are sealed with it.
 */
export class SecretBox {
  private constructor(
    private readonly databaseKey: Buffer,
    private readonly sealedKey: Buffer | null,
  ) {}

  static async open(db: Queryable, receiptKeySecret: string | undefined): Promise<SecretBox> {
    const stored = Buffer.from(await ensureServiceSecret(db, SECRET_NAME, randomBytes(32)));
    const databaseKey = Buffer.from(
      hkdfSync('sha256', stored, Buffer.alloc(0), 'webhook secrets', 32),
    );
    // scrypt once, here: RECEIPT_KEY_SECRET may be a passphrase.
    const sealedKey =
      receiptKeySecret === undefined
        ? null
        : scryptSync(
            receiptKeySecret,
            Buffer.concat([stored, Buffer.from('webhook secrets')]),
            32,
            {
              N: 2 ** 14,
              r: 8,
              p: 1,
            },
          );
    return new SecretBox(databaseKey, sealedKey);
  }

  seal(secret: string, agentId: string): string {
    const [version, key] = this.sealedKey ? ['v1s', this.sealedKey] : ['v1d', this.databaseKey];
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(agentId, 'utf8'));
    const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return `${version}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
  }

  /** The secret, or throws when this service cannot open it (RECEIPT_KEY_SECRET changed). */
  open(sealed: string, agentId: string): string {
    const [version, text] = sealed.split('.');
    const key = version === 'v1s' ? this.sealedKey : version === 'v1d' ? this.databaseKey : null;
    if (!key || text === undefined) {
      throw new Error('the webhook secret cannot be opened here (RECEIPT_KEY_SECRET missing?)');
    }
    const bytes = Buffer.from(text, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, 12));
    decipher.setAAD(Buffer.from(agentId, 'utf8'));
    decipher.setAuthTag(bytes.subarray(12, 28));
    try {
      return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      throw new Error('the webhook secret does not open (RECEIPT_KEY_SECRET changed?)');
    }
  }
}
