import { createHmac, randomBytes, sign, type KeyObject } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/** A new webhook secret: `whsec_` + base64 of 32 random bytes (Standard Webhooks' form). */
export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** The key bytes of a secret: the base64 after `whsec_`. */
function secretKey(secret: string): Buffer {
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

/** The service key that signs `v1a`: the current receipt-signing key. */
export interface SigningKeyPair {
  kid: string;
  privateKey: KeyObject;
}

/**
 * The Standard Webhooks headers of one attempt: `webhook-id`, `webhook-timestamp` (unix
 * seconds) and `webhook-signature` holding `v1,<HMAC-SHA256>` by the webhook's secret and
 * `v1a,<Ed25519>` by the service key (named by `webhook-key-id`), both base64 over
 * `<id>.<timestamp>.<body>`.
 */
export function signedHeaders(
  id: string,
  timestampSeconds: number,
  body: string,
  secret: string,
  key: SigningKeyPair,
): Record<string, string> {
  const content = Buffer.from(`${id}.${timestampSeconds}.${body}`, 'utf8');
  const hmac = createHmac('sha256', secretKey(secret)).update(content).digest('base64');
  const ed25519 = sign(null, content, key.privateKey).toString('base64');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${hmac} v1a,${ed25519}`,
    'webhook-key-id': key.kid,
  };
}
