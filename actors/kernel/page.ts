import { ServiceError } from '../../protocol/errors.ts';

/**
 * Opaque cursors of paginated lists: a kind letter and the keys of the last row, base64url.
 * A cursor of another list, or not ours at all, is refused with `invalid_cursor`.
 */
export function encodePageCursor(kind: string, keys: readonly string[]): string {
  return Buffer.from(`${kind}\u0000${keys.join('\u0000')}`).toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The keys of a cursor of `kind`; `shape` says what each key must look like. */
export function decodePageCursor(
  cursor: string,
  kind: string,
  shape: readonly ('uuid' | 'time' | 'text' | 'int')[],
): string[] {
  const [found, ...keys] = Buffer.from(cursor, 'base64url').toString('utf8').split('\u0000');
  const fits = (key: string | undefined, want: 'uuid' | 'time' | 'text' | 'int') =>
    key !== undefined &&
    (want === 'uuid'
      ? UUID.test(key)
      : want === 'time'
        ? !Number.isNaN(new Date(key).getTime())
        : want === 'int'
          ? /^[1-9][0-9]{0,9}$/.test(key)
          : key.length > 0);
  if (
    found !== kind ||
    keys.length !== shape.length ||
    !shape.every((want, i) => fits(keys[i], want))
  ) {
    throw new ServiceError(
      'invalid_cursor',
      'That cursor was not issued by this list. Pass the `next_cursor` of the previous page, or leave it out.',
      { field: 'cursor' },
    );
  }
  return keys;
}
