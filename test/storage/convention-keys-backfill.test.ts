import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { KNOWN_CONVENTIONS } from '../../protocol/conventions/known.ts';
import { conventionKeys } from '../../storage/conventions/convention-keys.ts';
import { databaseBeforeMigration } from '../helpers/migrations.ts';
import { driverKinds } from '../helpers/storage.ts';

/**
 * Migration 017 computes, in SQL, the near-duplicate keys of the conventions that were there
 * before it; storage/conventions/convention-keys.ts computes them in JS for every one written after. Both
 * must agree, or a convention from before the upgrade escapes the rules.
 */
const test = suite(
  'migration 017 backfills the keys storage/conventions/convention-keys.ts computes',
);

const dimensions = (keys: readonly string[]) =>
  keys.map((key) => ({ key, label: key, description: `About ${key}.` }));

/** Conventions with names and key sets of every shape the keys depend on. */
const conventions = [
  ...KNOWN_CONVENTIONS.map((c) => ({ name: c.name, dimensions: c.dimensions })),
  {
    name: 'pet-sitting',
    dimensions: dimensions(['species', 'town', 'visit', 'overnight', 'pets']),
  },
  {
    name: 'sittings-pets-bus',
    dimensions: dimensions(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']),
  },
  { name: 'abcd', dimensions: dimensions(['only_key']) },
  { name: 'abcde', dimensions: dimensions(['k1', 'k2']) },
  { name: 'web3-tools-2024', dimensions: dimensions(['x', 'x', 'y', 'z', 'w', 'v']) },
  { name: `long-${'abcdefghij'.repeat(5)}-end`, dimensions: dimensions(['one', 'two', 'three']) },
  {
    name: 'glass-class-mass',
    dimensions: dimensions(Array.from({ length: 12 }, (_, i) => `k${i}`)),
  },
  { name: 'no-dimensions', dimensions: [] },
];

for (const kind of driverKinds()) {
  test(`on ${kind}, every convention from before the migration gets the keys the JS computes`, async () => {
    const { driver, migrate, drop } = await databaseBeforeMigration(kind, 17);
    try {
      for (const c of conventions) {
        await driver.query(
          `insert into conventions (name, description, dimensions, status, placement, author_id,
             created_at) values ($1, 'd', $2::text::jsonb, 'unplaced', null, null, now())`,
          [c.name, JSON.stringify(c.dimensions)],
        );
      }
      await migrate();
      for (const c of conventions) {
        const want = conventionKeys(
          c.name,
          c.dimensions.map((d) => d.key),
        );
        const [row] = await driver.query<{ squashed_name: string; name_words: string }>(
          'select squashed_name, name_words from conventions where name = $1',
          [c.name],
        );
        assert.is(row?.squashed_name, want.squashed, c.name);
        assert.is(row?.name_words, want.words, c.name);
        const pieces = await driver.query<{
          name_length: number;
          piece: number;
          piece_text: string;
        }>(
          `select name_length, piece, piece_text from convention_name_pieces
           where convention = $1 order by piece`,
          [c.name],
        );
        assert.equal(
          pieces.map((p) => ({ length: p.name_length, piece: p.piece, text: p.piece_text })),
          want.pieces,
          c.name,
        );
        const prefix = await driver.query<{ key: string; key_count: number }>(
          'select key, key_count from convention_key_prefixes where convention = $1',
          [c.name],
        );
        assert.equal(prefix.map((p) => p.key).sort(), [...want.keyPrefix].sort(), c.name);
        for (const p of prefix) assert.is(p.key_count, want.keyCount, c.name);
      }
    } finally {
      await drop();
    }
  });
}

test.run();
