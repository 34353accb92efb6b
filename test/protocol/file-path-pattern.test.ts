import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { FILE_PATH_PATTERN } from '../../protocol/files/path-pattern.ts';
import { MAX_PATH_BYTES, parseFilePath } from '../../protocol/files/path.ts';

/**
 * The description's file-path `pattern` (protocol/files/path-pattern.ts) takes exactly the
 * paths parseFilePath takes, so that a client that checks with it is neither refused nor
 * stopped short (issue 35 §1: Schemathesis sent `\t...` and `""` as paths the description
 * allowed). Only the byte bound is left to words: a pattern counts characters.
 */
const test = suite('the file-path pattern and parseFilePath agree');

function taken(path: string): boolean {
  try {
    parseFilePath(path);
    return true;
  } catch {
    return false;
  }
}

const withinBytes = (path: string) => Buffer.byteLength(path) <= MAX_PATH_BYTES;

/** The characters the rules are about, and some of any kind. */
const SPECIAL = [
  ...'/./..\\ab\u00e9',
  '\u0000',
  '\t',
  '\u007f',
  '\u0085',
  '\u061c',
  '\u200e',
  '\u202e',
  '\u2066',
  '\u2024',
  '\u2025',
  '\ufe30',
  '\ufe52',
  '\uff0e',
  '\uff0f',
  '\uff3c',
  '\u2100',
  '\u2215',
  '\u29f8',
  '\u{1d23a}',
  '\u2028',
  'e\u0301',
];
const unit = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SPECIAL) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
);

test('a path fits the pattern exactly when parseFilePath takes it', () => {
  fc.assert(
    fc.property(fc.string({ unit, maxLength: 12 }), (path) => {
      if (!withinBytes(path)) return;
      assert.is(FILE_PATH_PATTERN.test(path), taken(path), JSON.stringify(path));
    }),
    { numRuns: 20_000 },
  );
});

test('the paths Schemathesis found, and plain ones, are judged alike', () => {
  for (const path of [
    '',
    '\t\u00f08)',
    'a//b',
    '/a',
    'a/',
    '..',
    'a/./b',
    '\uff0e\uff0e',
    'a\u2215b',
  ]) {
    assert.not.ok(FILE_PATH_PATTERN.test(path), JSON.stringify(path));
    assert.not.ok(taken(path), JSON.stringify(path));
  }
  for (const path of ['notes/today.md', 'a.b/c..d', '...', 'u\u0308-nfd.txt', 'a\uff0eb']) {
    assert.ok(FILE_PATH_PATTERN.test(path), JSON.stringify(path));
    assert.ok(taken(path), JSON.stringify(path));
  }
});

test.run();
