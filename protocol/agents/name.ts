/**
 * What an agent name may hold beyond its characters: every character visible, at least one
 * letter or digit, and letters of one script only, as UTS #39 (Unicode Security Mechanisms)
 * defines "single script": a character's Script_Extensions, with Han widened to the writing
 * systems that mix it (Japanese, Korean, Han with Bopomofo); Common and Inherited characters
 * (digits, space, punctuation) go with any script. Another agent's name set in look-alike letters
 * of another script (a Cyrillic "а" in "pаypal") is what this refuses.
 */

/** ISO 15924 codes of the scripts Unicode assigns; the ones this Node does not know are dropped. */
const SCRIPT_CODES = (
  'Adlm Aghb Ahom Arab Armi Armn Avst Bali Bamu Bass Batk Beng Berf Bhks Bopo Brah Brai Bugi Buhd ' +
  'Cakm Cans Cari Cham Cher Chis Chrs Copt Cpmn Cprt Cyrl Deva Diak Dogr Dsrt Dupl Egyp Elba Elym ' +
  'Ethi Gara Geor Glag Gong Gonm Goth Gran Grek Gujr Gukh Guru Hang Hani Hano Hatr Hebr Hira ' +
  'Hluw Hmng Hmnp Hung Ital Java Kali Kana Kawi Khar Khmr Khoj Kits Knda Krai Kthi Lana Laoo ' +
  'Latn Lepc Limb Lina Linb Lisu Lyci Lydi Mahj Maka Mand Mani Marc Medf Mend Merc Mero Mlym ' +
  'Modi Mong Mroo Mtei Mult Mymr Nagm Nand Narb Nbat Newa Nkoo Nshu Ogam Olck Onao Orkh Orya ' +
  'Osge Osma Ougr Palm Pauc Perm Phag Phli Phlp Phnx Plrd Prti Rjng Rohg Runr Samr Sarb Saur ' +
  'Sgnw Shaw Shrd Sidd Sidt Sind Sinh Sogd Sogo Sora Soyo Sund Sunu Sylo Syrc Tagb Takr Tale Talu ' +
  'Taml Tang Tavt Tayo Telu Tfng Tglg Thaa Thai Tibt Tirh Tnsa Todr Tols Toto Tutg Ugar Vaii Vith Wara ' +
  'Wcho Xpeo Xsux Yezi Yiii Zanb'
).split(' ');

function scriptTest(code: string): [string, RegExp] | [] {
  try {
    return [code, new RegExp(`\\p{Script_Extensions=${code}}`, 'u')];
  } catch {
    return []; // a script newer than this Node's Unicode: none of its letters can match anyway
  }
}

const SCRIPTS = SCRIPT_CODES.map(scriptTest).filter((t): t is [string, RegExp] => t.length > 0);

/** Writing systems that mix scripts, per UTS #39 "augmented script sets". */
const AUGMENTED: Record<string, string[]> = {
  Hani: ['Hanb', 'Jpan', 'Kore'],
  Hira: ['Jpan'],
  Kana: ['Jpan'],
  Hang: ['Kore'],
  Bopo: ['Hanb'],
};

const SCRIPT_NAMES: Record<string, string> = {
  Latn: 'Latin',
  Cyrl: 'Cyrillic',
  Grek: 'Greek',
  Arab: 'Arabic',
  Hebr: 'Hebrew',
  Armn: 'Armenian',
  Geor: 'Georgian',
  Hani: 'Han',
  Hira: 'Hiragana',
  Kana: 'Katakana',
  Hang: 'Hangul',
  Deva: 'Devanagari',
  Thai: 'Thai',
  Cher: 'Cherokee',
};

const COMMON_OR_INHERITED = /[\p{Script_Extensions=Zyyy}\p{Script_Extensions=Zinh}]/u;
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/u;
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/** The scripts one character may be written in; null for Common and Inherited (any script). */
export function scriptsOf(char: string): Set<string> | null {
  if (COMMON_OR_INHERITED.test(char)) return null;
  const scripts = new Set<string>();
  for (const [code, test] of SCRIPTS) {
    if (!test.test(char)) continue;
    scripts.add(code);
    for (const extra of AUGMENTED[code] ?? []) scripts.add(extra);
  }
  return scripts;
}

const hex = (char: string) =>
  `U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;

const scriptName = (scripts: Set<string>) => {
  const [first] = scripts;
  return first === undefined ? 'an unknown script' : (SCRIPT_NAMES[first] ?? first);
};

/**
 * What is wrong with a name beyond its characters, said so that an agent can fix it; null when
 * nothing is. The characters themselves (letters, digits, space, `-`, `_`, `.`) are checked by
 * the schema before this runs.
 */
export function nameProblem(name: string): string | null {
  const chars = [...name];
  const hidden = chars.find((char) => INVISIBLE.test(char));
  if (hidden !== undefined) {
    return `name holds an invisible character (${hex(hidden)}): use only characters that show.`;
  }
  if (!chars.some((char) => LETTER_OR_DIGIT.test(char))) {
    return 'name needs at least one visible letter or digit.';
  }
  let common: Set<string> | null = null;
  let firstScripts: Set<string> | null = null;
  for (const char of chars) {
    const scripts = scriptsOf(char);
    if (scripts === null) continue;
    firstScripts ??= scripts;
    const together: Set<string> = common === null ? scripts : intersect(common, scripts);
    if (together.size === 0) {
      return (
        `name mixes scripts (${scriptName(firstScripts)} and ${scriptName(scripts)} at "${char}"): ` +
        'write it in one script only, with digits, spaces and - _ . as you like.'
      );
    }
    common = together;
  }
  return null;
}

function intersect(a: Set<string>, b: Set<string>): Set<string> {
  return new Set([...a].filter((item) => b.has(item)));
}
