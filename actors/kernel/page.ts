import { ServiceError } from '../../protocol/errors.ts';

/**
 * Paginated lists. Every list reads its rows in one fixed key order, one row more than the page
 * holds (so whether more follow is known without counting), and names where the next page starts
 * from the page's last row: in an opaque cursor (a kind letter and the last row's keys,
 * base64url) or, for a list that pages by an id of its own, that id.
 */

/** Items on one page of any list when its `limit` is left out (protocol/paging.ts says 50). */
export const DEFAULT_PAGE_LIMIT = 50;

/** What a cursor's key must look like. */
export type KeyShape = 'uuid' | 'time' | 'text' | 'int';

/** The keys of a cursor, one string per shape. */
export type CursorKeys<S extends readonly KeyShape[]> = { -readonly [K in keyof S]: string };

/** The cursor of one list: its kind letter, its keys' shapes, and where a read starts from them. */
export interface PageCursor<S extends readonly KeyShape[], After> {
  kind: string;
  shape: S;
  /** Where the read after a cursor starts, from its checked keys; may refuse with `invalidCursor`. */
  after: (keys: CursorKeys<S>) => After;
}

/**
 * One page of at most `limit` rows (default DEFAULT_PAGE_LIMIT). `read` is asked for `fetch`
 * rows, one more than the page holds; `next` is what `nextOf` makes of the page's last row when
 * more follow, else null.
 */
export async function readPage<Row, Next>(
  limit: number | undefined,
  read: (fetch: number) => Promise<Row[]>,
  nextOf: (last: Row) => Next,
): Promise<{ rows: Row[]; next: Next | null }> {
  const size = limit ?? DEFAULT_PAGE_LIMIT;
  const fetched = await read(size + 1);
  const rows = fetched.slice(0, size);
  const last = rows.at(-1);
  return { rows, next: fetched.length > size && last !== undefined ? nextOf(last) : null };
}

/**
 * One page of a list paged by cursor: `input.cursor` (checked against `cursor`, else
 * `invalid_cursor`) says where `read` starts (undefined: at the beginning), and `nextCursor`
 * carries `keysOf` the page's last row when more follow.
 */
export async function readCursorPage<const S extends readonly KeyShape[], After, Row>(
  input: { limit?: number | undefined; cursor?: string | undefined },
  cursor: PageCursor<S, After>,
  read: (after: After | undefined, fetch: number) => Promise<Row[]>,
  keysOf: (last: Row) => CursorKeys<S>,
): Promise<{ rows: Row[]; nextCursor: string | null }> {
  const after =
    input.cursor === undefined
      ? undefined
      : cursor.after(decodePageCursor(input.cursor, cursor.kind, cursor.shape));
  const { rows, next } = await readPage(
    input.limit,
    (fetch) => read(after, fetch),
    (last) => encodePageCursor(cursor.kind, keysOf(last)),
  );
  return { rows, nextCursor: next };
}

export function encodePageCursor(kind: string, keys: readonly string[]): string {
  return Buffer.from(`${kind}\u0000${keys.join('\u0000')}`).toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function fits(key: string | undefined, want: KeyShape): boolean {
  return (
    key !== undefined &&
    (want === 'uuid'
      ? UUID.test(key)
      : want === 'time'
        ? !Number.isNaN(new Date(key).getTime())
        : want === 'int'
          ? /^[1-9][0-9]{0,9}$/.test(key)
          : key.length > 0)
  );
}

/**
 * The keys of a cursor of `kind`; `shape` says what each key must look like. A cursor of
 * another list, or not ours at all, is refused with `invalid_cursor`.
 */
export function decodePageCursor<const S extends readonly KeyShape[]>(
  cursor: string,
  kind: string,
  shape: S,
): CursorKeys<S> {
  const [found, ...keys] = Buffer.from(cursor, 'base64url').toString('utf8').split('\u0000');
  if (
    found !== kind ||
    keys.length !== shape.length ||
    !shape.every((want, i) => fits(keys[i], want))
  ) {
    throw invalidCursor();
  }
  return keys as CursorKeys<S>;
}

/** The refusal of a cursor this list did not issue. */
export function invalidCursor(): ServiceError {
  return new ServiceError(
    'invalid_cursor',
    'That cursor was not issued by this list. Pass the `next_cursor` of the previous page, or leave it out.',
    { field: 'cursor' },
  );
}
