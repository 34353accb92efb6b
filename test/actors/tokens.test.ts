import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { hashToken, newToken, sameHash, tokenShape } from '../../actors/kernel/tokens.ts';

const test = suite('API tokens');

test('new tokens carry the prefix, are unique and pass their own checksum', () => {
  const tokens = new Set(Array.from({ length: 200 }, () => newToken()));
  assert.is(tokens.size, 200);
  for (const token of tokens) {
    assert.match(token, /^asvc_[0-9A-Za-z]{46}$/);
    assert.is(tokenShape(token), 'ok');
  }
});

test('a token with one character changed fails its checksum', () => {
  const token = newToken();
  const flipped = token.slice(0, 10) + (token[10] === 'a' ? 'b' : 'a') + token.slice(11);
  assert.is(tokenShape(flipped), 'malformed');
});

test('other prefixes and junk are told apart before any lookup', () => {
  assert.is(tokenShape('ghp_abc'), 'wrong_prefix');
  assert.is(tokenShape('asvc_short'), 'malformed');
  assert.is(tokenShape(`asvc_${'!'.repeat(46)}`), 'malformed');
});

test('hashes compare equal only for the same token', () => {
  const token = newToken();
  assert.ok(sameHash(hashToken(token), hashToken(token)));
  assert.not.ok(sameHash(hashToken(token), hashToken(newToken())));
});

test.run();
