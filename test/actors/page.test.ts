import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  DEFAULT_PAGE_LIMIT,
  decodePageCursor,
  encodePageCursor,
  invalidCursor,
  readCursorPage,
  readPage,
  type PageCursor,
} from '../../actors/kernel/page.ts';
import { ServiceError } from '../../protocol/errors.ts';

const test = suite('paginated lists');

interface Row {
  at: Date;
  id: string;
}

/** Rows in list order, with ids that are UUIDs so they fit a cursor's 'uuid' key. */
const ROWS: Row[] = Array.from({ length: 7 }, (_, i) => ({
  at: new Date(Date.UTC(2024, 4, 1, 10, i)),
  id: `00000000-0000-4000-8000-00000000000${i}`,
}));

const BY_TIME: PageCursor<readonly ['time', 'uuid'], { at: Date; id: string }> = {
  kind: 't',
  shape: ['time', 'uuid'],
  after: ([at, id]) => ({ at: new Date(at), id }),
};

/** Reads ROWS after `after` as the storage functions do: in order, at most `fetch` rows. */
function reader(asked: number[] = []) {
  return async (after: { at: Date; id: string } | undefined, fetch: number) => {
    asked.push(fetch);
    const from = after ? ROWS.findIndex((row) => row.id === after.id) + 1 : 0;
    return ROWS.slice(from, from + fetch);
  };
}

const keysOf = (row: Row): [string, string] => [row.at.toISOString(), row.id];

async function refusal(run: () => Promise<unknown>): Promise<ServiceError> {
  try {
    await run();
  } catch (error) {
    assert.instance(error, ServiceError);
    return error as ServiceError;
  }
  throw new Error('expected a refusal');
}

test('a page holds `limit` rows, read as one more, and its cursor names its last row', async () => {
  const asked: number[] = [];
  const { rows, nextCursor } = await readCursorPage({ limit: 3 }, BY_TIME, reader(asked), keysOf);
  assert.equal(asked, [4]);
  assert.equal(rows, ROWS.slice(0, 3));
  assert.equal(decodePageCursor(nextCursor as string, 't', BY_TIME.shape), keysOf(ROWS[2] as Row));
});

test('following the cursors visits every row once, in order, and the last page has none', async () => {
  const seen: Row[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const { rows, nextCursor } = await readCursorPage(
      { limit: 3, cursor },
      BY_TIME,
      reader(),
      keysOf,
    );
    seen.push(...rows);
    cursor = nextCursor ?? undefined;
    pages++;
  } while (cursor !== undefined);
  assert.equal(seen, ROWS);
  assert.is(pages, 3);
});

test('a page that ends exactly at the last row has no cursor', async () => {
  const { rows, nextCursor } = await readCursorPage({ limit: 7 }, BY_TIME, reader(), keysOf);
  assert.is(rows.length, 7);
  assert.is(nextCursor, null);
});

test('without a limit a page holds 50 rows', async () => {
  const asked: number[] = [];
  await readCursorPage({}, BY_TIME, reader(asked), keysOf);
  assert.is(DEFAULT_PAGE_LIMIT, 50);
  assert.equal(asked, [51]);
});

test('a list paged by an id of its own is told what follows by the last row', async () => {
  const page = await readPage(
    2,
    async (fetch) => ROWS.slice(0, fetch),
    (last) => last.id,
  );
  assert.equal(page, { rows: ROWS.slice(0, 2), next: ROWS[1]?.id });
  const end = await readPage(
    9,
    async (fetch) => ROWS.slice(0, fetch),
    (last) => last.id,
  );
  assert.equal(end, { rows: ROWS, next: null });
});

test('cursors keep the wire form clients already hold', () => {
  // A kind letter and the keys, NUL-separated, base64url: cursors handed out before still work.
  const id = '6f1c7a1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b';
  assert.is(encodePageCursor('w', [id]), 'dwA2ZjFjN2ExZS0yYjNkLTRlNWYtOGE5Yi0wYzFkMmUzZjRhNWI');
  assert.is(
    encodePageCursor('r', ['2024-05-01T10:00:00.000Z', id]),
    'cgAyMDI0LTA1LTAxVDEwOjAwOjAwLjAwMFoANmYxYzdhMWUtMmIzZC00ZTVmLThhOWItMGMxZDJlM2Y0YTVi',
  );
});

test('a cursor of another list, of another shape, or not ours is refused before any read', async () => {
  const asked: number[] = [];
  const id = ROWS[0]?.id as string;
  for (const cursor of [
    encodePageCursor('w', [ROWS[0]?.at.toISOString() as string, id]),
    encodePageCursor('t', [id]),
    encodePageCursor('t', ['not a time', id]),
    encodePageCursor('t', [ROWS[0]?.at.toISOString() as string, 'not-a-uuid']),
    'not a cursor at all',
  ]) {
    const error = await refusal(() => readCursorPage({ cursor }, BY_TIME, reader(asked), keysOf));
    assert.is(error.code, 'invalid_cursor', cursor);
    assert.equal(error.extra, { field: 'cursor' });
  }
  assert.equal(asked, []);
});

test("a list's own check of its keys refuses with the same invalid_cursor", async () => {
  const strict: PageCursor<readonly ['text'], string> = {
    kind: 'x',
    shape: ['text'],
    after: ([key]) => {
      if (!key.startsWith('[')) throw invalidCursor();
      return key;
    },
  };
  const error = await refusal(() =>
    readCursorPage(
      { cursor: encodePageCursor('x', ['plain']) },
      strict,
      async () => [],
      () => [''],
    ),
  );
  const generic = await refusal(async () => decodePageCursor('junk', 'x', ['text']));
  assert.equal(
    [error.code, error.message, error.extra],
    [generic.code, generic.message, generic.extra],
  );
});

test.run();
