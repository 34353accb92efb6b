import * as assert from 'uvu/assert';
import type { ServiceError } from '../../protocol/errors.ts';
import type { DirectDoor } from './direct.ts';

/**
 * The agents capability through the direct door (./direct.ts), as its rule suites call it:
 * tokens made, listed and refused. The HTTP versions are in ./tokens.ts.
 */

/** The ids of the live tokens of the agent holding `token`, sorted. */
export async function liveTokenIds(door: DirectDoor, token: string): Promise<string[]> {
  return (await door.call('list_tokens', {}, token)).tokens.map((line) => line.token_id).sort();
}

/** Whether `token` is taken: whoami answers, or is refused `unauthorized`. */
export async function tokenWorks(door: DirectDoor, token: string): Promise<boolean> {
  try {
    await door.call('whoami', {}, token);
    return true;
  } catch (error) {
    if ((error as ServiceError).code === 'unauthorized') return false;
    throw error;
  }
}

/** Fails the test unless `refused` is a token_scope refusal that names `needed`. */
export function assertScopeRefused(refused: ServiceError, needed: string, what: string) {
  assert.is(refused.code, 'token_scope', `${what}: ${refused.message}`);
  assert.is(refused.extra.needed, needed, what);
}

/**
 * The names the agent-names suites sign up with, the same at every door: refused ones (with the
 * code and what the refusal says) and taken ones.
 */
export type NameRefusal = { name: string; why: string; code: string; hint: RegExp };

const lookAlike = (name: string, why: string): NameRefusal => ({
  name,
  why,
  code: 'name_reserved',
  hint: /service/,
});
const invalid = (name: string, why: string, hint: RegExp): NameRefusal => ({
  name,
  why,
  code: 'invalid_input',
  hint,
});

export const REFUSED_NAMES: NameRefusal[] = [
  lookAlike('ѕеrvісе', 'Cyrillic letters that look like Latin ones'),
  lookAlike('ｓｅｒｖｉｃｅ', 'fullwidth Latin letters'),
  lookAlike('servıce', 'a dotless i'),
  lookAlike('ſervice', 'a long s'),
  lookAlike('𝗌𝖾𝗋𝗏𝗂𝖼𝖾', 'mathematical sans-serif letters'),
  lookAlike('my ЅЕRVІСЕ bot', 'a look-alike inside a longer name, in capitals'),
  lookAlike('serv\u3164ice', 'the name with an invisible letter inside'),
  lookAlike('SERVlCE', 'capitals with a small L for the capital I'),
  lookAlike('sErVlCe', 'mixed case with a small L for the capital I'),
  lookAlike('ser vice', 'a space inside'),
  lookAlike('s.e.r.v.i.c.e', 'dots between the letters'),
  lookAlike('s_e-r v.i.c.e', 'mixed separators'),
  lookAlike('sérvice', 'an accent'),
  lookAlike('şervice', 'a cedilla'),
  lookAlike('seɾvice', 'an r with a fishhook (U+027E)'),
  lookAlike('sɛrvice', 'an open e (U+025B)'),
  invalid('   ', 'spaces only', /visible letter or digit/),
  invalid('...', 'punctuation only', /visible letter or digit/),
  invalid('-_ .', 'separators only', /visible letter or digit/),
  invalid('\u3164', 'a Hangul filler (U+3164)', /invisible.*U\+3164/),
  invalid('\u115F', 'a Hangul choseong filler (U+115F)', /invisible.*U\+115F/),
  invalid('\u1160', 'a Hangul jungseong filler (U+1160)', /invisible.*U\+1160/),
  invalid('\uFFA0', 'a halfwidth Hangul filler (U+FFA0)', /invisible.*U\+FFA0/),
  invalid('bob\u3164', 'a visible name with an invisible letter after it', /invisible/),
  invalid('pаypal', 'a Latin name with one Cyrillic a', /Latin.*Cyrillic.*one script/),
  invalid('agent Σ', 'Latin and Greek', /one script/),
  invalid('bot 日本', 'Latin and Han', /one script/),
];

export const TAKEN_NAMES = [
  'Ünïcode-bot',
  '日本語エージェント',
  'agent 42',
  'Σωκράτης',
  'Привет бот',
  '한국어 봇',
  'server-observer',
  'nice vice sernice',
];
