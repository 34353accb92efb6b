import { createHash, createPublicKey, generateKeyPairSync, randomUUID, verify } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  receiptHash,
  signReceipt,
  verifyChain,
  verifyReceipt,
  type FileReceipt,
  type FileReceiptContent,
} from '../../actors/receipts/receipts.ts';
import { jwkOf, kidOf, rawPublicKey, type Jwks } from '../../actors/receipts/signing-keys.ts';
import { canonicalJson } from '../../protocol/jcs.ts';

const test = suite('signed, chained receipts');

/** A key as SigningKeys would give one, made here so that this suite needs no database. */
function newKey() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = rawPublicKey(publicKey);
  return { kid: kidOf(raw), privateKey, publicKey, raw };
}

const key = newKey();
const jwks: Jwks = { keys: [jwkOf({ kid: key.kid, publicKey: key.raw })] };

const workspaceId = randomUUID();
let version = 0;

function content(overrides: Partial<FileReceiptContent> = {}): FileReceiptContent {
  version += 1;
  return {
    receipt_id: randomUUID(),
    workspace_id: workspaceId,
    path: 'notes/ünïcode.md',
    action: 'save',
    version,
    size: 1234,
    sha256: createHash('sha256').update(String(version)).digest('hex'),
    agent_id: randomUUID(),
    agent_name: 'writer-bot',
    saved_at: new Date(Date.UTC(2030, 0, 1, 0, 0, version)).toISOString(),
    ...overrides,
  };
}

function chain(length: number, signer = key): FileReceipt[] {
  const receipts: FileReceipt[] = [];
  for (let i = 0; i < length; i++) {
    receipts.push(signReceipt(content(), receipts.at(-1) ?? null, signer));
  }
  return receipts;
}

test('a receipt verifies with node:crypto straight from the JWKS, re-implementing only JCS', () => {
  const receipt = signReceipt(content(), null, key);
  // As an outsider gets them: JSON over the wire.
  const served = JSON.parse(JSON.stringify(receipt)) as Record<string, unknown>;
  const published = JSON.parse(JSON.stringify(jwks)) as { keys: Record<string, string>[] };

  const jwk = published.keys.find((candidate) => candidate.kid === served.kid);
  assert.ok(jwk, 'the JWKS lists the kid the receipt names');
  assert.equal(Object.keys(jwk).sort(), ['crv', 'kid', 'kty', 'use', 'x']);
  assert.equal([jwk.kty, jwk.crv, jwk.use], ['OKP', 'Ed25519', 'sig']);
  const publicKey = createPublicKey({ key: jwk, format: 'jwk' });
  const { signature, ...signed } = served;
  assert.match(signature as string, /^[A-Za-z0-9_-]{86}$/, 'base64url, no padding');
  assert.ok(
    verify(
      null,
      Buffer.from(canonicalJson(signed), 'utf8'),
      publicKey,
      Buffer.from(signature as string, 'base64url'),
    ),
  );
  assert.equal(verifyReceipt(served, jwks), { ok: true });
});

test('the kid is base64url of the first 16 bytes of SHA-256 of the raw public key', () => {
  const expected = createHash('sha256').update(key.raw).digest().subarray(0, 16);
  assert.is(key.kid, expected.toString('base64url'));
  assert.is(key.kid.length, 22);
  assert.is(jwks.keys[0]?.x, key.raw.toString('base64url'));
});

test('a first receipt has a null prev_hash; the next one the hex SHA-256 of its JCS', () => {
  const [first, second] = chain(2);
  assert.is(first?.prev_hash, null);
  const expected = createHash('sha256').update(canonicalJson(first), 'utf8').digest('hex');
  assert.is(second?.prev_hash, expected);
  assert.is(receiptHash(first as FileReceipt), expected);
  assert.ok('signature' in (JSON.parse(canonicalJson(first)) as object), 'signature included');
});

test('signing keeps the content as given and adds kid, prev_hash and signature', () => {
  const unsigned = content();
  const receipt = signReceipt(unsigned, null, key);
  assert.equal(
    Object.keys(receipt).sort(),
    [...Object.keys(unsigned), 'kid', 'prev_hash', 'signature'].sort(),
  );
  for (const [name, value] of Object.entries(unsigned)) {
    assert.equal((receipt as Record<string, unknown>)[name], value);
  }
  assert.is(receipt.kid, key.kid);
});

test('an unsigned receipt that brings its own kid, prev_hash or signature is refused', () => {
  for (const member of ['kid', 'prev_hash', 'signature']) {
    assert.throws(() => signReceipt({ ...content(), [member]: null }, null, key), /may not hold/);
  }
});

test('changing, adding or removing any member makes the receipt fail', () => {
  const [previous, receipt] = chain(2) as [FileReceipt, FileReceipt];
  const otherHash = createHash('sha256').update('other').digest('hex');
  const changed = (value: unknown): unknown => {
    if (typeof value === 'number') return value + 1;
    if (value === null) return otherHash;
    if (typeof value !== 'string') throw new Error('unexpected member type');
    if (/^[0-9a-f]{64}$/.test(value)) return otherHash;
    return value.slice(0, -1) + (value.endsWith('A') ? 'B' : 'A');
  };
  for (const name of Object.keys(receipt)) {
    const tampered = { ...receipt, [name]: changed((receipt as Record<string, unknown>)[name]) };
    const verdict = verifyReceipt(tampered, jwks);
    assert.is(verdict.ok, false, `changed ${name}`);
    const without: Record<string, unknown> = { ...receipt };
    delete without[name];
    assert.is(verifyReceipt(without, jwks).ok, false, `removed ${name}`);
  }
  assert.is(verifyReceipt({ ...receipt, extra: 1 }, jwks).ok, false, 'added a member');
  assert.is(verifyReceipt({ ...receipt, action: 'delete' }, jwks).ok, false);
  // A receipt moved onto another predecessor fails too, though its own content is intact.
  assert.is(verifyReceipt({ ...receipt, prev_hash: receiptHash(receipt) }, jwks).ok, false);
  assert.equal(verifyReceipt(receipt, jwks), { ok: true });
  assert.equal(verifyChain([previous, receipt], jwks), { ok: true });
});

test('a receipt of an unknown key, or not shaped like one, fails with the reason', () => {
  const other = newKey();
  const receipt = signReceipt(content(), null, other);
  assert.equal(verifyReceipt(receipt, jwks), { ok: false, reason: 'unknown_key' });
  // The right kid with another key's x: the signature cannot match.
  const forged = { keys: [{ ...jwkOf({ kid: key.kid, publicKey: other.raw }) }] };
  assert.equal(verifyReceipt(signReceipt(content(), null, key), forged), {
    ok: false,
    reason: 'bad_signature',
  });
  for (const junk of [
    null,
    'receipt',
    [],
    {},
    { ...receipt, signature: `${receipt.signature}=` },
  ]) {
    assert.equal(verifyReceipt(junk, jwks), { ok: false, reason: 'malformed' });
  }
  assert.equal(verifyReceipt({ ...receipt, prev_hash: 'ABC' }, jwks), {
    ok: false,
    reason: 'malformed',
  });
  const broken = { keys: [{ ...jwkOf({ kid: other.kid, publicKey: other.raw }), x: 'AAAA' }] };
  assert.equal(verifyReceipt(receipt, broken), { ok: false, reason: 'unknown_key' });
});

test('an unbroken chain verifies, also after a trip through JSON', () => {
  const receipts = chain(6);
  assert.equal(verifyChain(receipts, jwks), { ok: true });
  assert.equal(verifyChain(JSON.parse(JSON.stringify(receipts)) as unknown[], jwks), { ok: true });
  assert.equal(verifyChain([], jwks), { ok: true });
});

test('a chain with one receipt removed fails where the gap is', () => {
  const receipts = chain(5);
  for (let gone = 0; gone < receipts.length - 1; gone++) {
    const cut = receipts.filter((_, index) => index !== gone);
    assert.equal(verifyChain(cut, jwks), { ok: false, index: gone, reason: 'broken_chain' });
  }
});

test('a chain with receipts reordered fails', () => {
  const receipts = chain(5);
  for (let i = 0; i + 1 < receipts.length; i++) {
    const swapped = [...receipts];
    [swapped[i], swapped[i + 1]] = [swapped[i + 1] as FileReceipt, swapped[i] as FileReceipt];
    const verdict = verifyChain(swapped, jwks);
    assert.is(verdict.ok, false, `swapped ${i} and ${i + 1}`);
  }
  assert.is(verifyChain([...receipts].reverse(), jwks).ok, false, 'newest first is not a chain');
});

test('a chain may start later when the receipt before it is given', () => {
  const receipts = chain(4);
  assert.equal(verifyChain(receipts.slice(2), jwks, { after: receipts[1] }), { ok: true });
  assert.equal(verifyChain(receipts.slice(2), jwks), {
    ok: false,
    index: 0,
    reason: 'broken_chain',
  });
  assert.equal(verifyChain(receipts.slice(2), jwks, { after: receipts[0] }), {
    ok: false,
    index: 0,
    reason: 'broken_chain',
  });
});

test('a receipt of another workspace does not belong in the chain', () => {
  const [first] = chain(1) as [FileReceipt];
  const stranger = signReceipt(content({ workspace_id: randomUUID() }), first, key);
  assert.equal(verifyChain([first, stranger], jwks), {
    ok: false,
    index: 1,
    reason: 'mixed_workspaces',
  });
});

test('receipts of other kinds sign and chain the same way', () => {
  const [file] = chain(1) as [FileReceipt];
  const agreement = signReceipt(
    {
      receipt_id: randomUUID(),
      workspace_id: workspaceId,
      kind: 'agreement',
      deal_id: 'd1',
      amount: '12.50',
    },
    file,
    key,
  );
  assert.equal(verifyChain([file, agreement], jwks), { ok: true });
});

test.run();
