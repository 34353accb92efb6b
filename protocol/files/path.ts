import { ServiceError } from '../errors.ts';
import { isWellFormed } from '../input-guard.ts';

/** The longest file path, in bytes of UTF-8 after normalisation. */
export const MAX_PATH_BYTES = 1024;

/** The rule a refused path broke; it travels as `rule` in the problem, beside `detail`. */
export type FilePathRule =
  | 'empty_path'
  | 'leading_slash'
  | 'not_utf8'
  | 'control_character'
  | 'bidi_control'
  | 'empty_segment'
  | 'dot_segment'
  | 'lookalike_separator'
  | 'backslash'
  | 'too_long';

// C0 (NUL included), DEL and C1: never part of a name anyone means to type.
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// Bidirectional controls reorder what a reader sees: `txt.exe` can display as `exe.txt`.
const BIDI_CONTROL = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
// Symbols and punctuation that Unicode's confusables list maps to `/` or `\` and that NFKC
// leaves alone (letters such as `ノ` or `丿` are names people write, and stay allowed). Shown
// in a listing, `a∕..∕b` reads as a path that climbs.
const LOOKALIKE_SEPARATOR =
  /[\u1735\u2041\u2044\u2215\u2216\u2571\u2572\u27cb\u27cd\u29f5\u29f8\u29f9\u31d3\u31d4\u{1d20f}\u{1d23a}\u{1d23b}]/u;
// NFC can compose at most four UTF-16 units into one, so a longer input can never fit.
const MAX_INPUT_UNITS = 4 * MAX_PATH_BYTES;
const encoder = new TextEncoder();

/**
 * A file path as the service compares it: the NFC key of a name, or a ServiceError
 * `invalid_path` whose `detail` names the rule broken (and `rule` gives it as a stable word).
 * Checking touches nothing: call it before any read or write.
 *
 * It takes the path decoded, segments joined by `/`: as MCP and JSON bodies carry it, and as
 * the HTTP router hands over a rest parameter (`*path`), whose `%2F` it has decoded to `/`
 * like any other escape. So every rule holds for what the path means, however it was spelt
 * in a URL: `a%2F..%2Fb` is the `..` climb it decodes to. The result is NFC-normalised, so
 * two spellings of one name are one file; the spelling sent is kept beside it
 * (`parseFileName`).
 */
export function parseFilePath(input: string, field = 'path'): string {
  return parseFileName(input, field).path;
}

/**
 * A file name as sent and as compared (normalisation-insensitive, normalisation-preserving, as
 * APFS is): `path` is the NFC key every lookup, conflict and uniqueness check uses; `asSent` is
 * the spelling the client wrote (`u\u0308` stays NFD), which listings show, so that a client
 * comparing names byte for byte (azcopy sync, az download-batch) finds its own. Both obey every
 * rule of `parseFilePath`, and the spelling is at most 1,024 bytes too: a longer one is its key.
 */
export function parseFileName(input: string, field = 'path'): { path: string; asSent: string } {
  const refuse = (rule: FilePathRule, detail: string): ServiceError =>
    new ServiceError('invalid_path', `The \`${field}\` ${detail}.`, { field, rule });

  if (input === '') throw refuse('empty_path', 'is empty; name a file such as `notes/today.md`');
  if (input.length > MAX_INPUT_UNITS) throw tooLong();
  if (input.startsWith('/')) {
    throw refuse('leading_slash', 'starts with `/`; paths are relative to the workspace');
  }
  const segments = input.split('/');
  const normalised: string[] = [];
  for (const segment of segments) {
    if (!isWellFormed(segment)) {
      throw refuse('not_utf8', 'is not valid UTF-8 (it holds a lone surrogate)');
    }
    const control = CONTROL.exec(segment);
    if (control) {
      throw refuse(
        'control_character',
        `holds the control character ${codePoint(control[0])}${control[0] === '\u0000' ? ' (NUL)' : ''}`,
      );
    }
    const bidi = BIDI_CONTROL.exec(segment);
    if (bidi) {
      throw refuse(
        'bidi_control',
        `holds the bidirectional control ${codePoint(bidi[0])}, which changes how the name reads`,
      );
    }
    if (segment === '')
      throw refuse('empty_segment', 'has an empty segment (`//`, or `/` at an end)');
    const nfc = segment.normalize('NFC');
    if (nfc === '.' || nfc === '..') {
      throw refuse('dot_segment', 'has a `.` or `..` segment; name the path without them');
    }
    // Some tools fold compatibility forms (NFKC): `．．` would become `..` and `a／b` two
    // segments there. Refused here so that no copy of the workspace can climb or split.
    const folded = nfc.normalize('NFKC');
    // A separator on Windows: a copy of the workspace there would read `a\..\b` as a climb.
    if (folded.includes('\\')) {
      throw refuse(
        'backslash',
        'holds a backslash (`\\`), which separates segments on Windows; use `/` between segments and no `\\` in a name',
      );
    }
    const lookalike = LOOKALIKE_SEPARATOR.exec(nfc);
    if (lookalike) {
      throw refuse(
        'lookalike_separator',
        `holds ${codePoint(lookalike[0])} (${lookalike[0]}), which looks like \`/\` or \`\\\`; use \`/\` between segments and no look-alike in a name`,
      );
    }
    if (folded === '.' || folded === '..' || folded.includes('/')) {
      throw refuse(
        'lookalike_separator',
        `has the segment "${nfc}", which reads as \`/\`, \`.\` or \`..\` once compatibility forms are folded`,
      );
    }
    normalised.push(nfc);
  }
  const path = normalised.join('/');
  if (encoder.encode(path).length > MAX_PATH_BYTES) throw tooLong();
  // The spelling kept beside the key is held to the key's bound: one longer (600 decomposed
  // `é` are 1,800 bytes, 1,200 composed) is kept as its key.
  const keepable = input === path || encoder.encode(input).length <= MAX_PATH_BYTES;
  return { path, asSent: keepable ? input : path };

  function tooLong(): ServiceError {
    return refuse('too_long', `is longer than ${MAX_PATH_BYTES} bytes of UTF-8`);
  }
}

function codePoint(char: string): string {
  return `U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}
