import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  KEY_OVERLAP,
  keyCountRange,
  keyPrefix,
  namePieceProbes,
  namePieces,
  NAME_MIN_LENGTH,
} from '../../storage/conventions/convention-keys.ts';

/**
 * The index keys of the near-duplicate rules find every convention a rule can match: a name
 * within two edits always shares a stored piece with the proposal's probes, and key sets that
 * overlap by 80% always share a prefix key and fall in each other's size range. Checked on many
 * random pairs (a fixed seed: the same pairs every run) and on every edit of one name.
 */
const test = suite('the index keys of the near-duplicate rules miss no near-duplicate');

/** A small deterministic generator (mulberry32), so that a failure can be replayed. */
function random(seed: number) {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function levenshtein(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current.push(
        Math.min(
          previous[j]! + 1,
          current[j - 1]! + 1,
          previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
        ),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}

function found(stored: string, proposal: string): boolean {
  const pieces = new Set(namePieces(stored).map((p) => `${p.length}/${p.piece}/${p.text}`));
  return namePieceProbes(proposal).some((p) => pieces.has(`${p.length}/${p.piece}/${p.text}`));
}

/** Every string one edit (insert, delete, substitute; letters of `alphabet`) from `word`. */
function oneEdit(word: string, alphabet: string): string[] {
  const out = new Set<string>();
  for (let i = 0; i <= word.length; i++) {
    for (const c of alphabet) out.add(word.slice(0, i) + c + word.slice(i));
    if (i < word.length) {
      out.add(word.slice(0, i) + word.slice(i + 1));
      for (const c of alphabet) out.add(word.slice(0, i) + c + word.slice(i + 1));
    }
  }
  return [...out];
}

test('every name within two edits of a stored one, each edit of it tried, is found by its pieces', () => {
  const alphabet = 'abx';
  for (const stored of ['harbourcrane', 'abcde', 'aaaaaaa', 'abcdefghijklmnopqrstuvwxyz']) {
    const twice = new Set(oneEdit(stored, alphabet).flatMap((once) => oneEdit(once, alphabet)));
    for (const proposal of twice) {
      if (proposal.length < NAME_MIN_LENGTH) continue;
      assert.ok(found(stored, proposal), `${proposal} is within two edits of ${stored}`);
    }
  }
});

test('random names within two edits are found by their pieces, from either side', () => {
  const next = random(17);
  const letters = 'abcd';
  const word = (length: number) =>
    Array.from({ length }, () => letters[Math.floor(next() * letters.length)]).join('');
  let near = 0;
  for (let trial = 0; trial < 20_000; trial++) {
    const a = word(NAME_MIN_LENGTH + Math.floor(next() * 20));
    let b = a;
    for (let edits = Math.floor(next() * 3); edits > 0; edits--) {
      const at = Math.floor(next() * (b.length + 1));
      const kind = Math.floor(next() * 3);
      const c = letters[Math.floor(next() * letters.length)];
      b =
        kind === 0
          ? b.slice(0, at) + c + b.slice(at)
          : kind === 1
            ? b.slice(0, at) + b.slice(at + 1)
            : b.slice(0, at) + c + b.slice(at + 1);
    }
    if (b.length < NAME_MIN_LENGTH || levenshtein(a, b) > 2) continue;
    near++;
    assert.ok(found(a, b), `${b} near stored ${a}`);
    assert.ok(found(b, a), `${a} near stored ${b}`);
  }
  assert.ok(near > 10_000, `${near} near pairs tried`);
});

test('key sets overlapping by 80% share a prefix key and lie in each other’s size range', () => {
  const next = random(29);
  const universe = Array.from({ length: 14 }, (_, i) => `key_${i}`);
  const pick = () => universe.filter(() => next() < 0.6);
  let close = 0;
  for (let trial = 0; trial < 50_000; trial++) {
    const a = pick();
    const b =
      next() < 0.5 ? pick() : a.filter(() => next() < 0.9).concat(next() < 0.5 ? [] : ['key_x']);
    const shared = a.filter((key) => b.includes(key)).length;
    const either = new Set([...a, ...b]).size;
    if (either === 0 || shared / either < KEY_OVERLAP) continue;
    close++;
    const prefixB = new Set(keyPrefix(b));
    assert.ok(
      keyPrefix(a).some((key) => prefixB.has(key)),
      `${a.join(',')} and ${b.join(',')} overlap by ${shared}/${either}`,
    );
    const { least, most } = keyCountRange(a.length);
    assert.ok(b.length >= least && b.length <= most, `${b.length} keys against ${a.length}`);
  }
  assert.ok(close > 1_000, `${close} close pairs tried`);
});

test.run();
