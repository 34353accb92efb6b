import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { README, readmeWithSettings, settingRows } from '../../deploy/readme-settings.ts';
import { JOB_SCHEDULE_PREFIX, configFromEnv } from '../../server/config.ts';

/**
 * Every environment variable the service reads is a row of README.md's "Configuration" table,
 * with the default and meaning its owner declares (server/config.ts for the doors and the kernel,
 * actors/<capability>/settings.ts for each capability), and every row is read.
 */
const root = join(import.meta.dirname, '../..');

/** The variables configFromEnv reads, by name (a Proxy over an empty environment). */
function variablesRead(): Set<string> {
  const read = new Set<string>();
  const env = new Proxy({} as NodeJS.ProcessEnv, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return undefined;
    },
  });
  configFromEnv(env);
  return read;
}

const test = suite("README.md's configuration table");

test('the table in README.md is the one the code declares (npm run readme:settings writes it)', () => {
  const readme = readFileSync(README, 'utf8');
  assert.fixture(readmeWithSettings(readme), readme);
});

test('every variable the service reads has a row, and every row of the service is read', () => {
  const declared = new Set(settingRows().flatMap((row) => row.variables));
  const read = variablesRead();
  assert.ok(read.size > 40, `only ${read.size} variables read: the probe misses reads`);
  assert.equal(
    [...read].filter((variable) => !declared.has(variable)),
    [],
    'read but not declared in a row',
  );
  // Job schedules are read by their prefix; ANVIL_PORT by `npm run chain`, not the service.
  const unread = [...declared].filter(
    (variable) =>
      !read.has(variable) && !variable.startsWith(JOB_SCHEDULE_PREFIX) && variable !== 'ANVIL_PORT',
  );
  assert.equal(unread, [], 'declared but never read');
  assert.ok(readFileSync(join(root, 'deploy/local-chain.ts'), 'utf8').includes('env.ANVIL_PORT'));
});

test('a JOB_SCHEDULE_<NAME> variable is read for every scheduled job, and only through the prefix', () => {
  const schedules = configFromEnv({ JOB_SCHEDULE_BLOBS_COLLECT: '5 * * * *' }).jobSchedules;
  assert.equal(schedules, { BLOBS_COLLECT: '5 * * * *' });
});

test('no module of the service reads the environment but server/config.ts', () => {
  const modules = (dir: string): string[] =>
    readdirSync(join(root, dir)).flatMap((name) => {
      const path = `${dir}/${name}`;
      if (statSync(join(root, path)).isDirectory()) return modules(path);
      return name.endsWith('.ts') ? [path] : [];
    });
  const readers = ['actors', 'server', 'storage', 'protocol', 'machines']
    .flatMap(modules)
    .filter((path) => readFileSync(join(root, path), 'utf8').includes('process.env'));
  assert.equal(readers, ['server/config.ts']);
});

test.run();
