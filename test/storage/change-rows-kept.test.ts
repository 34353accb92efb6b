import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

/**
 * Migration 044 took the per-row checks off `changes` (two foreign keys and a unique index of
 * event ids), because the one statement that writes a change row makes them true already. That
 * holds only while nothing removes an agent, a feed head, a change or a shared payload: a
 * removed agent would leave change rows naming no one, a removed payload rows pointing at
 * nothing. So the service's code (every .ts and .sql it runs, migrations included) is scanned
 * for any statement that deletes from, truncates or drops one of those tables; one found fails
 * here until the checks it relied on are put back.
 */

const root = join(import.meta.dirname, '../..');
const SOURCE_FOLDERS = ['actors', 'server', 'storage', 'protocol', 'machines'];
const KEPT_TABLES = ['agents', 'feed_heads', 'changes', 'change_payloads'];

function sourceFiles(folder: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) found.push(...sourceFiles(path));
    else if (/\.(?:ts|mjs|sql)$/.test(name)) found.push(path);
  }
  return found;
}

const removal = new RegExp(
  `\\b(?:delete\\s+from|truncate(?:\\s+table)?|drop\\s+table(?:\\s+if\\s+exists)?)\\s+(?:only\\s+)?(${KEPT_TABLES.join('|')})\\b`,
  'gi',
);

const test = suite('change rows are never orphaned');

test('the scan recognises each way of removing rows it looks for', () => {
  const samples = [
    'delete from changes where agent_id = $1',
    'DELETE FROM agents',
    'truncate change_payloads',
    'truncate table feed_heads',
    'drop table if exists changes',
    'delete from only agents',
  ];
  for (const sample of samples) {
    removal.lastIndex = 0;
    assert.ok(removal.test(sample), sample);
  }
  removal.lastIndex = 0;
  assert.not.ok(removal.test('delete from changes_archive'), 'another table is not one of them');
});

test('nothing in the service deletes agents, feed heads, changes or their payloads', () => {
  const found: string[] = [];
  for (const folder of SOURCE_FOLDERS) {
    for (const path of sourceFiles(join(root, folder))) {
      const text = readFileSync(path, 'utf8');
      for (const match of text.matchAll(removal)) {
        found.push(`${relative(root, path)}: ${match[0]}`);
      }
    }
  }
  assert.equal(found, [], `found:\n${found.join('\n')}`);
});

test.run();
