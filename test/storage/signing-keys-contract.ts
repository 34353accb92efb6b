import { createPrivateKey, createPublicKey, randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import {
  issueReceipt,
  signReceipt,
  verifyChain,
  verifyReceipt,
  type SignedReceipt,
} from '../../actors/receipts/receipts.ts';
import { kidOf, rawPublicKey, SigningKeys } from '../../actors/receipts/signing-keys.ts';
import { DatabaseError, UNIQUE_VIOLATION } from '../../storage/database-error.ts';
import type { Driver, Queryable } from '../../storage/driver.ts';
import {
  findSigningKey,
  insertSigningKey,
  listSigningKeys,
} from '../../storage/receipts/signing-keys.ts';
import { TestClock } from '../helpers/clock.ts';
import { openTestDriver, type DriverKind } from '../helpers/storage.ts';
import { driverSuite } from './contract.ts';

const SECRET = 'a-test-secret-of-enough-length-0123456789';

/** A Queryable that must not be asked: the key has to come from memory. */
const unreachable: Queryable = {
  query: () => Promise.reject(new Error('the database was asked')),
  script: () => Promise.reject(new Error('the database was asked')),
};

/** The signing keys and their table: every driver runs this same suite. */
export function signingKeysContract(kind: DriverKind): void {
  // The table holds one current key per database: each test starts from an empty one.
  const test = driverSuite<{ driver: Driver }>(kind, `signing keys on ${kind}`);

  test.before(async (context) => {
    context.driver = await openTestDriver(kind);
  });
  test.before.each(async ({ driver }) => {
    await driver.query('delete from signing_keys');
  });
  test.after(async ({ driver }) => {
    await driver.close();
  });

  test('the first start makes one key; a later start, or another process, finds the same', async ({
    driver,
  }) => {
    const first = await new SigningKeys().start(driver);
    const again = await new SigningKeys().start(driver);
    assert.is(again.kid, first.kid);
    const rows = await listSigningKeys(driver);
    assert.is(rows.length, 1);
    const [row] = rows;
    assert.is(row?.kid, first.kid);
    assert.is(row?.retiredAt, null);
    assert.ok(row?.createdAt instanceof Date);
    assert.is(row?.publicKey.length, 32, 'the raw public key');
    assert.is(kidOf(row?.publicKey as Uint8Array), row?.kid);
    // Unsealed, the private key is PKCS#8 DER of the same pair.
    assert.is(row?.sealed, false);
    const privateKey = createPrivateKey({
      key: Buffer.from(row?.privateKey as Uint8Array),
      format: 'der',
      type: 'pkcs8',
    });
    assert.ok(rawPublicKey(createPublicKey(privateKey)).equals(Buffer.from(row?.publicKey ?? [])));
  });

  test('processes starting at once on one database agree on one key', async ({ driver }) => {
    const keys = await Promise.all(
      Array.from({ length: 4 }, () => new SigningKeys().start(driver)),
    );
    assert.is(new Set(keys.map((key) => key.kid)).size, 1);
    assert.is((await listSigningKeys(driver)).length, 1);
  });

  test('the database holds at most one current key', async ({ driver }) => {
    const current = await new SigningKeys().start(driver);
    const row = await findSigningKey(driver, current.kid);
    const error = await driver
      .transaction((tx) =>
        insertSigningKey(tx, {
          kid: 'another-kid',
          publicKey: row?.publicKey as Uint8Array,
          privateKey: row?.privateKey as Uint8Array,
          sealed: false,
        }),
      )
      .catch((caught: unknown) => caught);
    assert.instance(error, DatabaseError);
    assert.is((error as DatabaseError).sqlState, UNIQUE_VIOLATION);
  });

  test('the JWKS lists every key as an Ed25519 JWK, retired ones included', async ({ driver }) => {
    const keys = new SigningKeys();
    const old = await keys.start(driver);
    const fresh = await keys.rotate(driver);
    assert.is.not(fresh.kid, old.kid);
    assert.ok(old.retiredAt instanceof Date, 'the old key knows it is retired');
    const jwks = await keys.jwks(driver);
    assert.equal(jwks.keys.map((jwk) => jwk.kid).sort(), [old.kid, fresh.kid].sort());
    for (const jwk of jwks.keys) {
      assert.equal(Object.keys(jwk).sort(), ['crv', 'kid', 'kty', 'use', 'x']);
      assert.equal([jwk.kty, jwk.crv, jwk.use], ['OKP', 'Ed25519', 'sig']);
      assert.is(kidOf(Buffer.from(jwk.x, 'base64url')), jwk.kid);
    }
    const rows = await listSigningKeys(driver);
    assert.ok(rows.find((row) => row.kid === old.kid)?.retiredAt instanceof Date);
    assert.is(rows.find((row) => row.kid === fresh.kid)?.retiredAt, null);
  });

  test('a rotated-out key still verifies its receipts, and the chain runs across the rotation', async ({
    driver,
  }) => {
    const keys = new SigningKeys();
    const workspaceId = randomUUID();
    const receipts: SignedReceipt[] = [];
    const issue = async () => {
      // As a command would: the key looked up inside its transaction.
      const receipt = await driver.transaction((tx) =>
        issueReceipt(
          tx,
          keys,
          { receipt_id: randomUUID(), workspace_id: workspaceId, n: receipts.length },
          receipts.at(-1) ?? null,
        ),
      );
      receipts.push(receipt);
      return receipt;
    };
    await keys.start(driver);
    const before = await issue();
    await keys.rotate(driver);
    const after = await issue();
    assert.is.not(after.kid, before.kid, 'new receipts use the new key');
    const jwks = await new SigningKeys().jwks(driver);
    assert.equal(verifyReceipt(before, jwks), { ok: true });
    assert.equal(verifyReceipt(after, jwks), { ok: true });
    assert.equal(verifyChain(receipts, jwks), { ok: true });
  });

  test('the current key answers from memory, and another process’s rotation shows within refreshMs', async ({
    driver,
  }) => {
    const clock = new TestClock();
    const here = new SigningKeys({ clock, refreshMs: 60_000 });
    const first = await here.start(driver);
    assert.is((await here.current(unreachable)).kid, first.kid);
    const rotated = await new SigningKeys().rotate(driver);
    clock.advance(59_999);
    assert.is((await here.current(unreachable)).kid, first.kid, 'still trusted from memory');
    clock.advance(1);
    assert.is((await here.current(driver)).kid, rotated.kid);
    assert.is((await here.current(unreachable)).kid, rotated.kid);
  });

  test('asking for the current key before any start says what is missing', async ({ driver }) => {
    await assertRejects(new SigningKeys().current(driver), /start/);
  });

  test('concurrent rotations end with exactly one current key', async ({ driver }) => {
    await new SigningKeys().start(driver);
    await Promise.all(Array.from({ length: 3 }, () => new SigningKeys().rotate(driver)));
    const rows = await listSigningKeys(driver);
    assert.is(rows.length, 4);
    assert.is(rows.filter((row) => row.retiredAt === null).length, 1);
  });

  test('with RECEIPT_KEY_SECRET the private key is stored sealed and opens only with it', async ({
    driver,
  }) => {
    const sealedKeys = new SigningKeys({ secret: SECRET });
    const key = await sealedKeys.start(driver);
    const row = await findSigningKey(driver, key.kid);
    assert.is(row?.sealed, true);
    const der = key.privateKey.export({ format: 'der', type: 'pkcs8' });
    const stored = Buffer.from(row?.privateKey as Uint8Array);
    assert.is(stored.indexOf(der.subarray(-32)), -1, 'the private key bytes are not in the row');
    assert.throws(() => createPrivateKey({ key: stored, format: 'der', type: 'pkcs8' }));

    // Another process with the same secret signs receipts the JWKS verifies.
    const other = await new SigningKeys({ secret: SECRET }).start(driver);
    const receipt = signReceipt({ receipt_id: randomUUID() }, null, other);
    assert.equal(verifyReceipt(receipt, await sealedKeys.jwks(driver)), { ok: true });

    await assertRejects(new SigningKeys().start(driver), /RECEIPT_KEY_SECRET is needed/);
    await assertRejects(
      new SigningKeys({ secret: `${SECRET}-wrong` }).start(driver),
      /does not open it/,
    );
  });

  test('keys stored before the secret was set are sealed at the next start with it', async ({
    driver,
  }) => {
    const keys = new SigningKeys();
    const retired = await keys.start(driver);
    const plain = await keys.rotate(driver);
    const withSecret = new SigningKeys({ secret: SECRET });
    assert.is((await withSecret.start(driver)).kid, plain.kid, 'the same key, now sealed');
    for (const row of await listSigningKeys(driver)) assert.ok(row.sealed, row.kid);
    const receipt = signReceipt(
      { receipt_id: randomUUID() },
      null,
      await withSecret.current(driver),
    );
    assert.is(receipt.kid, plain.kid);
    assert.equal(verifyReceipt(receipt, await withSecret.jwks(driver)), { ok: true });
    assert.ok((await withSecret.jwks(driver)).keys.some((jwk) => jwk.kid === retired.kid));
    await assertRejects(new SigningKeys().start(driver), /RECEIPT_KEY_SECRET is needed/);
    const fresh = await withSecret.rotate(driver);
    assert.is((await findSigningKey(driver, fresh.kid))?.sealed, true);
  });

  test('a secret too short to protect anything is refused at once', () => {
    assert.throws(() => new SigningKeys({ secret: 'short' }), /at least 16/);
  });

  test.run();
}

async function assertRejects(promise: Promise<unknown>, message: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  assert.instance(error, Error);
  assert.match((error as Error).message, message);
}
