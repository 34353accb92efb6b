import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { LOOKUP_BATCH, TokenScan, tokensInText } from '../../actors/agents/leaked-tokens.ts';
import { hashToken, newToken } from '../../actors/kernel/tokens.ts';

/**
 * The scanner behind every save (actors/agents/leaked-tokens.ts): a token is found wherever the
 * chunks of a stream split it, only whole and with a free side left and right, and the work of
 * no number of decoys or look-alikes before a token hides it.
 */
const test = suite('the leaked-token scanner finds tokens across chunks, and only them');

const hex = (found: readonly Uint8Array[]) =>
  found.map((hash) => Buffer.from(hash).toString('hex'));

function scanPieces(pieces: readonly Buffer[]): string[] {
  const scan = new TokenScan();
  for (const piece of pieces) scan.see(piece);
  return hex(scan.found());
}

test('a token is found once at every split into two and three chunks, and byte by byte', () => {
  const token = newToken();
  const want = hex([hashToken(token)]);
  const text = Buffer.from(`~${token}\n`);
  for (let a = 0; a <= text.length; a++) {
    for (let b = a; b <= text.length; b++) {
      const pieces = [text.subarray(0, a), text.subarray(a, b), text.subarray(b)];
      assert.equal(scanPieces(pieces), want, `split at ${a} and ${b}`);
    }
  }
  assert.equal(scanPieces([...text].map((byte) => Buffer.from([byte]))), want, 'byte by byte');
});

test('a token at the very start or end of the bytes is found; one inside a longer word is not', () => {
  const token = newToken();
  assert.is(tokensInText(token).length, 1, 'the whole text');
  assert.is(tokensInText(`_${token}_`).length, 1, 'underscores are not base62');
  assert.is(tokensInText(`"${token}"`).length, 1, 'quoted');
  assert.is(tokensInText(`a${token}`).length, 0, 'a base62 character before');
  assert.is(tokensInText(`${token}Z`).length, 0, 'a base62 character after');
  assert.is(tokensInText(`asvc_${token}`).length, 1, 'after a stray prefix');
});

test('a look-alike whose checksum fails is not a token', () => {
  const token = newToken();
  const last = token.at(-1) === 'a' ? 'b' : 'a';
  assert.is(tokensInText(`${token.slice(0, -1)}${last}`).length, 0);
  assert.is(tokensInText(`asvc_${'A'.repeat(46)}`).length, 0);
});

test('repeats count once, and every distinct token is kept, however many', () => {
  const token = newToken();
  assert.is(tokensInText(`${token} ${token}\n${token}`).length, 1);
  const many = Array.from({ length: LOOKUP_BATCH * 3 }, () => newToken()).join('\n');
  assert.is(tokensInText(many).length, LOOKUP_BATCH * 3);
});

test('ten thousand look-alikes before a token do not hide it', () => {
  const token = newToken();
  const word = (n: number) => `asvc_${String(n).padStart(46, '0')} `;
  const before = Array.from({ length: 10_001 }, (_, n) => word(n)).join('');
  assert.is(tokensInText(`${before}${token}`).length, 1);
});

test('a megabyte of `asvc_` junk holds no token', () => {
  const junk = Buffer.alloc(1024 * 1024);
  for (let at = 0; at + 5 <= junk.length; at += 5) junk.write('asvc_', at, 'latin1');
  const pieces = [];
  for (let at = 0; at < junk.length; at += 65_536) pieces.push(junk.subarray(at, at + 65_536));
  assert.equal(scanPieces(pieces), []);
});

test.run();
