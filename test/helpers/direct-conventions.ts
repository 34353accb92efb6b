import type { DirectDoor } from './direct.ts';

/**
 * Conventions as the convention suites register them, and the whole list read through the
 * direct door (./direct.ts).
 */

/** A convention body with five dimension keys: `keys` if given, else keys of its own. */
export function convention(name: string, keys?: readonly string[]) {
  const own = keys ?? Array.from({ length: 5 }, (_, i) => `${name.replaceAll('-', '_')}_k${i}`);
  return {
    name,
    description: `What ${name} listings are about.`,
    dimensions: own.map((key) => ({
      key,
      label: `Label ${key}`,
      description: `What goes in ${key}.`,
    })),
  };
}

/**
 * The n-th of a family of names far apart from each other and from the built-in ones: letters
 * spelled from the number, so that no two are within two edits or share their words.
 */
export function farName(prefix: string, n: number): string {
  const letters = 'bcdfghjkmnpqrstvwxz';
  let word = '';
  let rest = n + 1;
  while (rest > 0) {
    word += letters[rest % letters.length];
    rest = Math.floor(rest / letters.length);
  }
  // Each letter three times: two names of different numbers differ in three places at least.
  return `${prefix}-${[...word].map((c) => c.repeat(3)).join('')}`;
}

/** The name of every convention, page by page through `next_cursor`. */
export async function conventionNames(door: DirectDoor, limit: number): Promise<string[]> {
  const names: string[] = [];
  let cursor: string | null = null;
  do {
    const page: { conventions: { name: string }[]; next_cursor: string | null } = await door.call(
      'list_conventions',
      { limit, ...(cursor ? { cursor } : {}) },
    );
    names.push(...page.conventions.map((c) => c.name));
    cursor = page.next_cursor;
  } while (cursor);
  return names;
}
