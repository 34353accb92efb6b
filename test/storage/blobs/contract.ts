import { randomBytes } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { BlobStore } from '../../../storage/blobs/blob-store.ts';
import {
  BlobNotFoundError,
  BlobRangeNotSatisfiableError,
  BlobTooLargeError,
} from '../../../storage/blobs/errors.ts';
import { md5Base64, sha256 } from '../../helpers/digests.ts';
import { chunksOf, failingAfter, readAll, stallingAfter } from './sources.ts';

/** A store under test, with a view of what it keeps underneath. */
export interface BlobStoreHarness {
  store: BlobStore;
  /** Every file or object the store keeps, blobs and temporary copies alike. */
  leftovers(): Promise<string[]>;
  /** How many file handles or connections onto the store's bytes are open, once settled. */
  openHandles(): Promise<number>;
  /** Makes the blob look last put at `at`, by changing what the store keeps underneath. */
  backdate(sha256: string, at: Date): Promise<void>;
  close(): Promise<void>;
}

const MB = 1024 * 1024;
const SECOND = 1_000;
/**
 * How far back a modified time read from a store may lie: S3's Last-Modified is an HTTP date
 * (whole seconds, truncated), and a server may stamp it when the request began. CI saw 1,002 ms
 * on s3rver; two seconds still tell "now" from the hour-old times set below.
 */
const STAMP_SLACK = 2 * SECOND;
const HOUR = 60 * 60 * 1_000;

/** The blob-store contract: every store runs this same suite. */
export function blobStoreContract(name: string, open: () => Promise<BlobStoreHarness>): void {
  const test = suite<{ harness: BlobStoreHarness; store: BlobStore }>(
    `blob store contract on ${name}`,
  );

  test.before.each(async (context) => {
    context.harness = await open();
    context.store = context.harness.store;
  });
  test.after.each(async ({ harness }) => {
    await harness.close();
  });

  test('a put answers the sha256, the MD5 and the size of the bytes, and they read back the same', async ({
    store,
  }) => {
    const bytes = randomBytes(300_000);
    const before = Date.now();
    const blob = await store.put(chunksOf(bytes, 7_000), { maxBytes: MB });
    assert.equal(blob, { sha256: sha256(bytes), md5: md5Base64(bytes), size: bytes.length });
    const stat = await store.stat(blob.sha256);
    assert.is(stat?.size, bytes.length);
    const modifiedAt = stat?.modifiedAt.getTime() ?? NaN;
    assert.ok(
      modifiedAt >= before - STAMP_SLACK && modifiedAt <= Date.now(),
      'modified by the put',
    );
    const content = await store.open(blob.sha256);
    assert.equal(
      [content.offset, content.length, content.blobSize],
      [0, bytes.length, bytes.length],
    );
    assert.ok((await readAll(content)).equals(bytes));
  });

  test('an empty blob is stored and read back as no bytes', async ({ store }) => {
    const blob = await store.put(chunksOf(new Uint8Array(0)), { maxBytes: 10 });
    const none = new Uint8Array(0);
    assert.equal(blob, { sha256: sha256(none), md5: md5Base64(none), size: 0 });
    assert.is((await store.stat(blob.sha256))?.size, 0);
    assert.is((await readAll(await store.open(blob.sha256))).length, 0);
  });

  test('a range reads just those bytes, its end clamped to the last byte', async ({ store }) => {
    const bytes = randomBytes(200_000);
    const { sha256 } = await store.put(chunksOf(bytes), { maxBytes: MB });
    const middle = await store.open(sha256, { start: 1_000, end: 150_999 });
    assert.equal([middle.offset, middle.length, middle.blobSize], [1_000, 150_000, 200_000]);
    assert.ok((await readAll(middle)).equals(bytes.subarray(1_000, 151_000)));
    const tail = await store.open(sha256, { start: 199_990 });
    assert.ok((await readAll(tail)).equals(bytes.subarray(199_990)));
    const clamped = await store.open(sha256, { start: 199_000, end: 10_000_000 });
    assert.is(clamped.length, 1_000);
    assert.ok((await readAll(clamped)).equals(bytes.subarray(199_000)));
    const lastByte = await store.open(sha256, { start: 199_999, end: 199_999 });
    assert.ok((await readAll(lastByte)).equals(bytes.subarray(199_999)));
  });

  test('a range that starts past the last byte is refused with the blob size', async ({
    store,
    harness,
  }) => {
    const { sha256 } = await store.put(chunksOf(randomBytes(100)), { maxBytes: MB });
    const error = await store.open(sha256, { start: 100 }).catch((e: unknown) => e);
    assert.instance(error, BlobRangeNotSatisfiableError);
    assert.is((error as BlobRangeNotSatisfiableError).blobSize, 100);
    const empty = await store.put(chunksOf(new Uint8Array(0)), { maxBytes: MB });
    const onEmpty = await store.open(empty.sha256, { start: 0 }).catch((e: unknown) => e);
    assert.instance(onEmpty, BlobRangeNotSatisfiableError);
    const backwards = await store.open(sha256, { start: 5, end: 2 }).catch((e: unknown) => e);
    assert.instance(backwards, TypeError);
    assert.is(await harness.openHandles(), 0);
  });

  test('putting the same bytes again answers the same address and keeps one copy', async ({
    store,
    harness,
  }) => {
    const bytes = randomBytes(50_000);
    const first = await store.put(chunksOf(bytes, 1_000), { maxBytes: MB });
    const second = await store.put(chunksOf(bytes, 30_000), { maxBytes: MB });
    assert.equal(second, first);
    assert.equal(await harness.leftovers(), [first.sha256]);
    assert.ok((await readAll(await store.open(first.sha256))).equals(bytes));
  });

  test('putting bytes already stored makes them modified now again, and stat says so', async ({
    store,
    harness,
  }) => {
    const bytes = randomBytes(20_000);
    const { sha256 } = await store.put(chunksOf(bytes), { maxBytes: MB });
    const anHourAgo = new Date(Date.now() - HOUR);
    await harness.backdate(sha256, anHourAgo);
    const aged = (await store.stat(sha256))?.modifiedAt.getTime() ?? NaN;
    assert.ok(Math.abs(aged - anHourAgo.getTime()) <= SECOND, 'stat reports the older time');
    const before = Date.now();
    await store.put(chunksOf(bytes), { maxBytes: MB });
    const again = (await store.stat(sha256))?.modifiedAt.getTime() ?? NaN;
    assert.ok(again >= before - STAMP_SLACK, `modified ${before - again} ms before the second put`);
    assert.equal(await harness.leftovers(), [sha256]);
  });

  test('bytes past maxBytes are refused and nothing is left behind', async ({ store, harness }) => {
    const bytes = randomBytes(10_001);
    const error = await store
      .put(chunksOf(bytes, 1_000), { maxBytes: 10_000 })
      .catch((e: unknown) => e);
    assert.instance(error, BlobTooLargeError);
    assert.is((error as BlobTooLargeError).maxBytes, 10_000);
    assert.equal(await harness.leftovers(), []);
    assert.is(await store.stat(sha256(bytes)), null);
    const exact = await store.put(chunksOf(bytes.subarray(0, 10_000)), { maxBytes: 10_000 });
    assert.is(exact.size, 10_000);
  });

  test('an abort mid-stream rejects with its reason and leaves nothing', async ({
    store,
    harness,
  }) => {
    const controller = new AbortController();
    const chunks = [randomBytes(70_000), randomBytes(70_000)];
    const error = await store
      .put(
        stallingAfter(chunks, () => controller.abort()),
        {
          maxBytes: MB,
          signal: controller.signal,
        },
      )
      .catch((e: unknown) => e);
    assert.is(error, controller.signal.reason);
    assert.equal(await harness.leftovers(), []);
  });

  test('an already aborted signal stores nothing', async ({ store, harness }) => {
    const error = await store
      .put(chunksOf(randomBytes(10)), { maxBytes: MB, signal: AbortSignal.abort() })
      .catch((e: unknown) => e);
    assert.is((error as Error).name, 'AbortError');
    assert.equal(await harness.leftovers(), []);
  });

  test('a source that fails mid-stream rejects with its error and leaves nothing', async ({
    store,
    harness,
  }) => {
    const dropped = new Error('connection reset');
    const error = await store
      .put(failingAfter([randomBytes(100_000)], dropped), { maxBytes: MB })
      .catch((e: unknown) => e);
    assert.is(error, dropped);
    assert.equal(await harness.leftovers(), []);
  });

  test('a consumer that stops early releases the handle', async ({ store, harness }) => {
    const bytes = randomBytes(2 * MB);
    const { sha256 } = await store.put(chunksOf(bytes, 256 * 1024), { maxBytes: 4 * MB });
    const content = await store.open(sha256);
    let read = 0;
    for await (const chunk of content) {
      read += chunk.length;
      break;
    }
    assert.ok(read > 0 && read < bytes.length);
    assert.is(await harness.openHandles(), 0);
    const unread = await store.open(sha256, { start: 10 });
    await unread.close();
    assert.is(await harness.openHandles(), 0);
  });

  test('a missing blob is not found, and deleting it twice is harmless', async ({
    store,
    harness,
  }) => {
    const { sha256 } = await store.put(chunksOf(randomBytes(1_000)), { maxBytes: MB });
    await store.delete(sha256);
    await store.delete(sha256);
    assert.is(await store.stat(sha256), null);
    const error = await store.open(sha256).catch((e: unknown) => e);
    assert.instance(error, BlobNotFoundError);
    assert.equal(await harness.leftovers(), []);
  });

  test('a detached blob leaves its address at once, and its bytes once the rest of the removal has run', async ({
    store,
    harness,
  }) => {
    const { sha256 } = await store.put(chunksOf(randomBytes(100_000)), { maxBytes: MB });
    const freeRoom = await store.detach(sha256);
    assert.is(await store.stat(sha256), null);
    assert.instance(await store.open(sha256).catch((e: unknown) => e), BlobNotFoundError);
    const listed: string[] = [];
    for await (const each of store.list()) listed.push(each);
    assert.not.ok(listed.includes(sha256));
    await freeRoom();
    assert.equal(await harness.leftovers(), []);
    // Detaching a blob the store does not hold is harmless, as deleting it is.
    await (
      await store.detach(sha256)
    )();
    assert.equal(await harness.leftovers(), []);
  });

  test('list answers every blob held, once', async ({ store }) => {
    const stored = await Promise.all(
      [1, 2, 3].map(() => store.put(chunksOf(randomBytes(2_000)), { maxBytes: MB })),
    );
    const listed: string[] = [];
    for await (const sha256 of store.list()) listed.push(sha256);
    assert.equal(listed.sort(), stored.map((blob) => blob.sha256).sort());
  });

  test('an address that is not a hex sha256 is a bug and throws a TypeError', async ({ store }) => {
    for (const bad of ['../etc/passwd', 'ABC', 'a'.repeat(63), 'A'.repeat(64)]) {
      assert.instance(await store.stat(bad).catch((e: unknown) => e), TypeError);
      assert.instance(await store.open(bad).catch((e: unknown) => e), TypeError);
      assert.instance(await store.delete(bad).catch((e: unknown) => e), TypeError);
      assert.instance(await store.detach(bad).catch((e: unknown) => e), TypeError);
    }
  });

  test.run();
}
