import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ServiceError } from '../../protocol/errors.ts';
import {
  MAX_PATH_BYTES,
  parseFileName,
  parseFilePath,
  type FilePathRule,
} from '../../protocol/files/path.ts';
import { Router } from '../../server/http/router.ts';

const test = suite('file paths');

/** The rule `parseFilePath` reports for `input`, or `ok: <path>` when it takes it. */
function verdict(input: string): string {
  try {
    return `ok: ${parseFilePath(input)}`;
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    assert.is(error.code, 'invalid_path');
    assert.is(error.status, 400);
    return String(error.extra.rule);
  }
}

const long = (bytes: number, char = 'a') => char.repeat(bytes);

// Every attack with the rule it must report: the path as MCP carries it, or as the router hands
// over a rest parameter once decoded (`%2F` included).
const attacks: [string, string, FilePathRule][] = [
  ['an empty path', '', 'empty_path'],
  ['a leading slash', '/etc/passwd', 'leading_slash'],
  ['a parent segment', '../secret', 'dot_segment'],
  ['a parent segment in the middle', 'a/../../b', 'dot_segment'],
  ['a parent segment at the end', 'a/..', 'dot_segment'],
  ['a current segment', './a', 'dot_segment'],
  ['a decoded %2F that would climb', decodeURIComponent('..%2F..%2Fetc'), 'dot_segment'],
  ['a double slash', 'a//b', 'empty_segment'],
  ['a trailing slash', 'a/b/', 'empty_segment'],
  ['a decoded %2F%2F', decodeURIComponent('a%2F%2Fb'), 'empty_segment'],
  ['a decoded leading %2F', decodeURIComponent('%2Fetc'), 'leading_slash'],
  ['NUL', 'a\u0000.md', 'control_character'],
  ['NUL to cut a suffix off', 'report.md\u0000.exe', 'control_character'],
  ['a newline (log injection)', 'a\nb', 'control_character'],
  ['a tab', 'a\tb', 'control_character'],
  ['escape (terminal injection)', 'a\u001b[31m', 'control_character'],
  ['DEL', 'a\u007f', 'control_character'],
  ['a C1 control (NEL)', 'a\u0085b', 'control_character'],
  ['a C1 control (CSI)', 'a\u009bb', 'control_character'],
  ['a right-to-left override', 'invoice\u202egpj.exe', 'bidi_control'],
  ['a left-to-right mark', 'a\u200eb', 'bidi_control'],
  ['a right-to-left isolate', 'a\u2067b', 'bidi_control'],
  ['an Arabic letter mark', 'a\u061cb', 'bidi_control'],
  ['a lone high surrogate', 'a\ud800b', 'not_utf8'],
  ['a lone low surrogate', 'a\udc00', 'not_utf8'],
  ['a backslash (a separator on Windows)', 'back\\slash', 'backslash'],
  ['backslashes that climb on Windows', 'a\\..\\b', 'backslash'],
  ['a decoded %5C', decodeURIComponent('a%5C..%5Cb'), 'backslash'],
  ['a fullwidth reverse solidus', 'a\uff3cb', 'backslash'],
  ['a small reverse solidus', 'a\ufe68b', 'backslash'],
  ['a fullwidth solidus', 'a\uff0fb', 'lookalike_separator'],
  ['fullwidth full stops as a parent segment', '\uff0e\uff0e/etc', 'lookalike_separator'],
  ['a one-dot leader pair as a parent segment', '\u2024\u2024', 'lookalike_separator'],
  ['a division slash', 'a\u2215..\u2215b', 'lookalike_separator'],
  ['a fraction slash', 'a\u2044b', 'lookalike_separator'],
  ['a big solidus', 'a\u29f8b', 'lookalike_separator'],
  ['a box-drawing diagonal', 'a\u2571b', 'lookalike_separator'],
  ['a mathematical rising diagonal', 'a\u27cbb', 'lookalike_separator'],
  ['a Philippine single punctuation', 'a\u1735b', 'lookalike_separator'],
  ['a CJK stroke that slants like /', 'a\u31d3b', 'lookalike_separator'],
  ['a Greek instrumental notation symbol (outside the BMP)', 'a\u{1d23a}b', 'lookalike_separator'],
  ['a set minus (looks like \\)', 'a\u2216b', 'lookalike_separator'],
  ['a reverse solidus operator', 'a\u29f5b', 'lookalike_separator'],
  ['a big reverse solidus', 'a\u29f9b', 'lookalike_separator'],
  ['a box-drawing falling diagonal', 'a\u2572b', 'lookalike_separator'],
  ['an overlong path of ASCII', long(MAX_PATH_BYTES + 1), 'too_long'],
  ['an overlong path of two-byte letters', long(513, 'é'), 'too_long'],
  ['an overlong path of four-byte letters', long(257, '😀'), 'too_long'],
  ['a huge path', long(1_000_000), 'too_long'],
  ['an overlong path of segments', Array(600).fill('a').join('/'), 'too_long'],
];

for (const [name, input, rule] of attacks) {
  test(`${name} is refused as ${rule}`, () => {
    assert.is(verdict(input), rule);
  });
}

test('the detail names the rule in words and the field it concerns', () => {
  try {
    parseFilePath('a/../b', 'file');
    assert.unreachable();
  } catch (error) {
    assert.instance(error, ServiceError);
    const { message, extra } = error as ServiceError;
    assert.match(message, /`file`.*`\.` or `\.\.` segment/);
    assert.equal(extra, { field: 'file', rule: 'dot_segment' });
  }
});

test('NUL is named as NUL, with its code point', () => {
  assert.throws(() => parseFilePath('a\u0000'), /U\+0000 \(NUL\)/);
});

test('ordinary paths come through as they are', () => {
  assert.is(verdict('notes/today.md'), 'ok: notes/today.md');
  assert.is(verdict('a'), 'ok: a');
  assert.is(verdict('.hidden/..more/a..b/...'), 'ok: .hidden/..more/a..b/...');
  assert.is(
    verdict('with space/and-dash_underscore (1).txt'),
    'ok: with space/and-dash_underscore (1).txt',
  );
  assert.is(verdict('日本語/ファイル.md'), 'ok: 日本語/ファイル.md');
  assert.is(verdict('emoji/😀.md'), 'ok: emoji/😀.md');
});

test('decomposed and composed spellings of one name become the same NFC path', () => {
  const composed = parseFilePath('caf\u00e9.md');
  const decomposed = parseFilePath('cafe\u0301.md');
  assert.is(composed, 'caf\u00e9.md');
  assert.is(decomposed, composed);
  assert.is(parseFilePath('\u1100\u1161'), '\uac00'); // Hangul jamo compose to one syllable
  assert.is(parseFilePath('\u212b'), '\u00c5'); // the angstrom sign is canonically Å
});

test('a name keeps its spelling as sent beside its NFC key, within the same 1,024 bytes', () => {
  assert.equal(parseFileName('u\u0308-nfd.txt'), {
    path: '\u00fc-nfd.txt',
    asSent: 'u\u0308-nfd.txt',
  });
  assert.equal(parseFileName('dir/caf\u00e9.md'), {
    path: 'dir/caf\u00e9.md',
    asSent: 'dir/caf\u00e9.md',
  });
  // 500 decomposed é are 1,500 bytes as sent, 1,000 composed: the file is kept, under its key.
  assert.equal(parseFileName(long(500, 'e\u0301')), {
    path: long(500, '\u00e9'),
    asSent: long(500, '\u00e9'),
  });
  assert.is(parseFileName(long(340, 'e\u0301')).asSent, long(340, 'e\u0301'));
});

test('NFC keeps compatibility forms apart: a ligature stays a ligature', () => {
  assert.is(parseFilePath('\ufb01le.md'), '\ufb01le.md');
});

test('the length limit counts UTF-8 bytes after normalisation, inclusive', () => {
  assert.is(parseFilePath(long(MAX_PATH_BYTES)).length, MAX_PATH_BYTES);
  assert.is(parseFilePath(long(512, 'é')), long(512, 'é'));
  // 600 decomposed é are 1,800 bytes as sent but 1,200 composed; 500 are 1,000 composed.
  assert.is(verdict(long(600, 'e\u0301')), 'too_long');
  assert.is(parseFilePath(long(500, 'e\u0301')), long(500, 'é'));
});

test('letters that slant like a slash are names people write, and stay allowed', () => {
  // Katakana NO, the Kangxi radical and CJK ideograph 丿, the Coptic letter: letters, not symbols.
  for (const name of ['\u30ce\u30fc\u30c8.md', '\u4e3f', '\u2cc6', '\u4e36']) {
    assert.is(verdict(name), `ok: ${name}`);
  }
});

test('a look-alike is named by its code point, so a reader sees what to remove', () => {
  assert.throws(() => parseFilePath('a\u2215b'), /U\+2215/);
});

// The HTTP router decodes a rest parameter whole (`%2F` to `/`) and hands it to parseFilePath,
// so a path spelt with escapes gets exactly the verdict of the path it decodes to: MCP, which
// takes paths decoded, is no narrower and no wider than the URL doors.
test('through the router, an encoded path gets the verdict of the path it decodes to', () => {
  const router = new Router<string>();
  router.add('PUT', '/workspaces/:id/files/*path', 'write_file');
  const raw = [
    'a/b.md',
    'a%2Fb',
    'a%2fb%2Fc.md',
    'a%2F..%2Fb',
    '..%2Fb',
    'a%2F.%2Fb',
    'a%2F%2Fb',
    'a%2F',
    '%2Fa',
    'a/%2e%2e/b',
    'a/%2E/b',
    'a%00b',
    'a%2F%00b',
    'caf%C3%A9',
    'cafe%CC%81',
    'a%EF%BC%8Fb',
    'a%E2%88%95b',
    'a%5Cb',
    'a%E2%80%AEb',
    'a%0Ab',
  ];
  for (const path of raw) {
    let routed: string;
    try {
      // The router hands over the spelling; the handler compares its key.
      const spelt = router.match('PUT', `/workspaces/w/files/${path}`).params.path ?? '';
      assert.is(spelt, parseFileName(spelt).asSent, path);
      routed = `ok: ${parseFilePath(spelt)}`;
    } catch (error) {
      assert.instance(error, ServiceError, path);
      assert.is((error as ServiceError).code, 'invalid_path', path);
      routed = String((error as ServiceError).extra.rule);
    }
    assert.is(routed, verdict(decodeURIComponent(path)), path);
  }
});

test.run();
