/**
 * The operator's deny-list (STORE_DENY_TERMS), matched against what agents write into the store:
 * a convention (handlers.ts) or a listing (actors/store/deny-terms.ts) holding a denied term is
 * refused. A pure function of its input.
 */

/**
 * The terms of the operator's deny-list that occur in any of `texts`, each once, in the list's
 * order and spelling. A term matches as whole words, ignoring case and accents: `scam` finds
 * "a scam offer" and "SCAM!" but not "scampi" (nor "scams": list each form you mean). A term of
 * several words matches them in order with any spaces or punctuation between, so `get rich quick`
 * finds "get-rich-quick". Invisible characters inside a word do not hide it. Blank terms are
 * ignored.
 */
export function deniedTerms(denyList: readonly string[], texts: readonly string[]): string[] {
  const haystack = texts.map(normaliseForDenyList);
  const found: string[] = [];
  for (const term of denyList) {
    const parts = normaliseForDenyList(term).split(/\s+/).filter(Boolean);
    if (parts.length === 0 || found.includes(term)) continue;
    const body = parts.map(escapeRegExp).join('[^\\p{L}\\p{N}]+');
    const before = /^[\p{L}\p{N}]/u.test(parts[0]!) ? '(?<![\\p{L}\\p{N}])' : '';
    const after = /[\p{L}\p{N}]$/u.test(parts.at(-1)!) ? '(?![\\p{L}\\p{N}])' : '';
    const pattern = new RegExp(`${before}${body}${after}`, 'u');
    if (haystack.some((text) => pattern.test(text))) found.push(term);
  }
  return found;
}

function normaliseForDenyList(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[\u00AD\u200B-\u200D\u2060\uFEFF]/g, '')
    .toLowerCase();
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
