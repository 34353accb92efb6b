import { createHash } from 'node:crypto';

/** The hex SHA-256 of bytes or of a string's UTF-8: what receipts, ETags and blob names carry. */
export function sha256(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The base64 MD5 of bytes or of a string's UTF-8: what Content-MD5 carries. */
export function md5Base64(data: Uint8Array | string): string {
  return createHash('md5').update(data).digest('base64');
}
