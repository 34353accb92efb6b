import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { nameProblem, scriptsOf } from '../../protocol/agents/name.ts';

const test = suite('agent name rules');

test('every letter and digit this Node knows belongs to a script the name rules know', () => {
  const unplaced: string[] = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const char = String.fromCodePoint(cp);
    if (!/[\p{L}\p{N}]/u.test(char)) continue;
    const scripts = scriptsOf(char);
    if (scripts !== null && scripts.size === 0) unplaced.push(cp.toString(16));
  }
  assert.equal(unplaced.slice(0, 20), [], `${unplaced.length} letters or digits in no script`);
});

test('Japanese, Korean and Chinese with Bopomofo count as one script each, as UTS #39 says', () => {
  assert.is(nameProblem('日本語エージェント'), null);
  assert.is(nameProblem('ひらがなカタカナ漢字'), null);
  assert.is(nameProblem('한국어 漢字'), null);
  assert.is(nameProblem('注音ㄅㄆㄇ'), null);
  assert.match(nameProblem('ひらがな 한국어') ?? '', /mixes scripts/);
});

test('digits and separators go with any one script', () => {
  assert.is(nameProblem('Σωκράτης 2.0_3-1'), null);
  assert.is(nameProblem('42'), null);
});

test.run();
