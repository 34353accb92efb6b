import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

/**
 * An agent's credentials are its tokens and its signing keys, cached apart (TokenResolver,
 * RequestSignatures). What changes them (a revoke, a rotation, a suspension, a leak) must forget
 * both at once through `services.forgetCredentials`: forgetting only the tokens once left a
 * suspended agent's signatures working in the process that suspended it. So no module but the
 * kernel's services forgets one cache alone.
 */
const test = suite('credentials are forgotten together');

const root = join(import.meta.dirname, '../..');

function modules(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    if (statSync(join(root, path)).isDirectory()) return modules(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

test('no module but actors/kernel/services.ts forgets the tokens or the keys of an agent alone', () => {
  const alone = /\b(tokens|signatures)\.(forgetAgent|forgetAll)\(/;
  const offenders = ['actors', 'server', 'storage']
    .flatMap(modules)
    .filter((path) => path !== 'actors/kernel/services.ts')
    .filter((path) => alone.test(readFileSync(join(root, path), 'utf8')));
  assert.equal(offenders, []);
});

test.run();
