import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readHeader } from '../../actors/index/yaml-header.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { parseCommandBody } from '../../server/email/commands.ts';

/**
 * Every parser of agents' YAML bounds what the text expands to (protocol/yaml-expansion.ts), not
 * only how many aliases it has (issue 32 §2). The parsers are found in the code: every module
 * that imports a parsing function of the `yaml` package. Each must be listed here with how to
 * call it, and each refuses the alias bomb and the deep-nesting bombs with an answer naming the
 * bound. A new module that parses YAML fails this test until it is listed and bounded.
 */
const ROOT = join(import.meta.dirname, '../..');
const SOURCES = ['actors', 'server', 'protocol', 'storage', 'machines'];
const PARSING = /\b(parse|parseDocument|parseAllDocuments|Parser|Composer|Lexer|default)\b/;

/** The refusal of `text` by one parser, or 'read' when it read it. */
const PARSERS: Record<string, (text: string) => string> = {
  'actors/index/yaml-header.ts': (text) => {
    const reading = readHeader(text);
    return 'error' in reading ? reading.error : 'read';
  },
  'server/email/commands.ts': (text) => {
    try {
      parseCommandBody(text);
      return 'read';
    } catch (error) {
      assert.instance(error, ServiceError);
      assert.is((error as ServiceError).code, 'invalid_yaml');
      return (error as Error).message;
    }
  },
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|mjs)$/.test(entry.name) ? [path] : [];
  });
}

/** Modules that import a parsing function (or the whole package) from `yaml`. */
function yamlParsers(): string[] {
  const imports = /import\s+(?:type\s+)?([^;]*?)\s+from\s+'yaml'/g;
  return SOURCES.flatMap((top) => sourceFiles(join(ROOT, top)))
    .filter((file) =>
      [...readFileSync(file, 'utf8').matchAll(imports)].some(
        ([, names]) => !/^type\b/.test(names ?? '') && PARSING.test(names ?? ''),
      ),
    )
    .map((file) => relative(ROOT, file))
    .sort();
}

const times = (count: number, line: (index: number) => string) =>
  Array.from({ length: count }, (_, index) => line(index)).join('\n');

/** The issue's header: 40 KB, 99 aliases of a 20,000-item list (8.6 MB as JSON). */
const ALIAS_BOMB = `a0: &a [${times(20_000, () => 'x').replaceAll('\n', ',')}]\n${times(99, (i) => `a${i + 1}: *a`)}`;
/** Nesting past every bound by aliases alone: 5 anchors of 20 levels, each wrapping the last. */
const ALIASED_DEPTH = [
  `l0: &l0 ${'['.repeat(20)}x${']'.repeat(20)}`,
  ...Array.from(
    { length: 4 },
    (_, i) => `l${i + 1}: &l${i + 1} ${'['.repeat(20)}*l${i}${']'.repeat(20)}`,
  ),
].join('\n');
/** Nesting in the text itself: 200 levels, then 20,000. */
const DEEP = (levels: number) => `k: ${'['.repeat(levels)}${']'.repeat(levels)}`;

test('every module that parses YAML is listed here, with the bound it holds', () => {
  assert.equal(yamlParsers(), Object.keys(PARSERS).sort());
  for (const module of Object.keys(PARSERS)) {
    assert.match(readFileSync(join(ROOT, module), 'utf8'), 'protocol/yaml-expansion.ts');
  }
});

for (const [module, parse] of Object.entries(PARSERS)) {
  test(`${module} refuses the alias bomb by what it expands to, naming the bound`, () => {
    assert.match(parse(ALIAS_BOMB), /expands to more than \d+ bytes as JSON/);
  });
  test(`${module} refuses nesting past its bound, in the text or through aliases`, () => {
    assert.match(parse(ALIASED_DEPTH), /more than \d+ levels deep/);
    assert.match(parse(DEEP(200)), /more than \d+ levels deep/);
    assert.is.not(parse(DEEP(20_000)), 'read');
  });
}

test.run();
