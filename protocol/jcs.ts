/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): the one text of a JSON value that signatures and
 * hashes are computed over, so that anyone holding the value can recompute the same bytes.
 *
 * - Object members are sorted by their names' UTF-16 code units (what JS string comparison
 *   does), arrays keep their order, and there is no whitespace.
 * - Numbers are written as ECMAScript's Number::toString writes them (JSON.stringify does the
 *   same, -0 included, which becomes `0`); NaN and the infinities are not JSON and are refused.
 * - Strings escape only `"`, `\` and U+0000..U+001F (as \b \t \n \f \r or lower-case \u00hh);
 *   every other character is written as itself. JSON.stringify does exactly this for
 *   well-formed strings; a lone surrogate is not I-JSON (RFC 7493) and is refused.
 *
 * The input is a JSON value as JSON.parse would give it: null, booleans, finite numbers,
 * strings, arrays and plain objects. Anything else (undefined, bigint, functions, Dates, class
 * instances, cycles) is refused rather than guessed at, since a signature over a guess proves
 * nothing. Pure: no I/O.
 */
export class CanonicalJsonError extends Error {
  override readonly name = 'CanonicalJsonError';
}

/** The UTF-8 of this text is what gets hashed or signed. */
export function canonicalJson(value: unknown): string {
  return write(value, [], '$');
}

// With the `u` flag a surrogate pair is one code point, so this matches only lone halves.
const LONE_SURROGATE = /\p{Surrogate}/u;

function write(value: unknown, open: object[], at: string): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) {
        throw new CanonicalJsonError(`${at}: ${value} is not a JSON number`);
      }
      return JSON.stringify(value);
    case 'string':
      return writeString(value, at);
    case 'object':
      break;
    default:
      throw new CanonicalJsonError(`${at}: a ${typeof value} is not a JSON value`);
  }
  if (open.includes(value)) throw new CanonicalJsonError(`${at}: the value contains itself`);
  open.push(value);
  try {
    if (Array.isArray(value)) {
      return `[${value.map((item, index) => write(item, open, `${at}[${index}]`)).join(',')}]`;
    }
    const prototype = Object.getPrototypeOf(value) as unknown;
    if (prototype !== Object.prototype && prototype !== null) {
      throw new CanonicalJsonError(`${at}: only plain objects are JSON objects`);
    }
    // Default sort compares UTF-16 code units, which is the order RFC 8785 asks for.
    const names = Object.keys(value).sort();
    const members = names.map((name) => {
      const member = (value as Record<string, unknown>)[name];
      return `${writeString(name, at)}:${write(member, open, `${at}.${name}`)}`;
    });
    return `{${members.join(',')}}`;
  } finally {
    open.pop();
  }
}

function writeString(text: string, at: string): string {
  if (LONE_SURROGATE.test(text)) {
    throw new CanonicalJsonError(`${at}: a string holds a lone surrogate (not I-JSON)`);
  }
  return JSON.stringify(text);
}
