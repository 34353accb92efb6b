import { createHash, hash as oneShotHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API tokens: `asvc_` + 40 random base62 characters + a 6-character checksum, so that secret
 * scanners can match the prefix and tell a real token from a look-alike without asking us.
 * Only the SHA-256 of a token is stored; tokens are never logged.
 */
export const TOKEN_PREFIX = 'asvc_';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 40;
const CHECK_LENGTH = 6;

function base62(bytes: Uint8Array, length: number): string {
  let out = '';
  for (let i = 0; out.length < length; i++) {
    // Rejection sampling keeps every character equally likely.
    const byte = bytes[i % bytes.length] as number;
    if (byte < 248) out += ALPHABET[byte % 62];
    if (i >= bytes.length - 1 && out.length < length) bytes = randomBytes(64);
  }
  return out;
}

function checksum(body: string): string {
  const digest = createHash('sha256').update(body).digest();
  let n = digest.readUInt32BE(0);
  let out = '';
  for (let i = 0; i < CHECK_LENGTH; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export function newToken(): string {
  return randomToken(TOKEN_PREFIX);
}

/** Invite tokens: the same form under their own prefix, so that neither passes for the other. */
export const INVITE_TOKEN_PREFIX = 'asvi_';

export function newInviteToken(): string {
  return randomToken(INVITE_TOKEN_PREFIX);
}

function randomToken(prefix: string): string {
  const body = base62(randomBytes(64), BODY_LENGTH);
  return `${prefix}${body}${checksum(body)}`;
}

export type TokenShape = 'ok' | 'wrong_prefix' | 'malformed';

/** Checks the form of a token before any lookup, so that junk costs nothing. */
export function tokenShape(token: string): TokenShape {
  if (!token.startsWith(TOKEN_PREFIX)) return 'wrong_prefix';
  const rest = token.slice(TOKEN_PREFIX.length);
  if (rest.length !== BODY_LENGTH + CHECK_LENGTH || !/^[0-9A-Za-z]+$/.test(rest))
    return 'malformed';
  const body = rest.slice(0, BODY_LENGTH);
  return checksum(body) === rest.slice(BODY_LENGTH) ? 'ok' : 'malformed';
}

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** The SHA-256 of a token as a string, for in-memory lookups on the hot path (every request). */
export function tokenKey(token: string): string {
  return oneShotHash('sha256', token, 'base64');
}

export function sameHash(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
