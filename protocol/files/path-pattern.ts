/**
 * The file-path rules of parseFilePath (./path.ts) as one regular expression, for the
 * description: OpenAPI's `pattern` of every file path (JSON fields, the `{path}` of a URL, a blob
 * name), so that a client checks a path before it sends it. The service still refuses with
 * parseFilePath (`400 invalid_path` naming the rule); test/protocol/file-path-pattern.test.ts
 * proves that the two agree on every path but one longer than 1,024 bytes of UTF-8, a bound a
 * pattern cannot count (`maxLength` counts characters).
 *
 * It is written with the characters themselves, not `\uXXXX` escapes, so that every regex
 * dialect reads it (Python's `re` and JavaScript alike; see protocol/json-schema.ts).
 */

/** `\uXXXX` and `\u{X}` escapes above U+00FF as the characters they name; `\xXX` stays. */
function literal(source: string): string {
  return source
    .replace(/\\u\{([0-9a-fA-F]+)\}/g, (_, hex: string) => String.fromCodePoint(parseInt(hex, 16)))
    .replace(/\\u([0-9a-fA-F]{4})/g, (_, hex: string) => {
      const code = parseInt(hex, 16);
      return code > 0xff ? String.fromCharCode(code) : `\\x${hex.slice(2)}`;
    });
}

/**
 * Characters no segment holds (./path.ts): C0, DEL and C1 controls; bidirectional controls;
 * `/` inside a segment and `\`; what NFKC folds to `/` or `\` (U+2100, U+2101, U+2105, U+2106,
 * U+FE68, U+FF0F, U+FF3C); the confusables of `/` and `\` that NFKC leaves alone.
 */
const FORBIDDEN = literal(
  '\\x00-\\x1f\\x7f-\\x9f' +
    '\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069' +
    '/\\\\' +
    '\\u2100\\u2101\\u2105\\u2106\\ufe68\\uff0f\\uff3c' +
    '\\u1735\\u2041\\u2044\\u2215\\u2216\\u2571\\u2572\\u27cb\\u27cd\\u29f5\\u29f8\\u29f9\\u31d3\\u31d4' +
    '\\u{1d20f}\\u{1d23a}\\u{1d23b}',
);

/** A whole segment that is `.` or `..` once NFKC folds it (U+2024, U+FE52, U+FF0E are `.`). */
const DOT_SEGMENT = literal('(?:[.\\u2024\\ufe52\\uff0e]{1,2}|[\\u2025\\ufe30])');

const SEGMENT = `[^${FORBIDDEN}]+`;

/** No `.`/`..` segment anywhere, then segments joined by single `/`: no leading, trailing or `//`. */
export const FILE_PATH_PATTERN = new RegExp(
  `^(?!(?:[^/]*/)*${DOT_SEGMENT}(?:/|$))${SEGMENT}(?:/${SEGMENT})*$`,
  'u',
);
