import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.ts';

/**
 * `npm start` runs the JavaScript deploy/build.mjs makes (issue 36: no TypeScript loader in
 * the service). Every file of the service's folders is in build/ (the list is read from the
 * sources, so a new file or folder is covered), nothing stale stays there, and the built service
 * works where it reaches for files beside its code: documents, migrations and its threads.
 */
const test = suite<{ service: ServiceProcess | null }>('the JavaScript npm start runs', {
  service: null,
});

const ROOT = join(import.meta.dirname, '../..');
const BUILD = join(ROOT, 'build');
/** Runs the build; what it says (on stderr): nothing when there was nothing to do. */
const build = () =>
  spawnSync(process.execPath, [join(ROOT, 'deploy/build.mjs')], { encoding: 'utf8' }).stderr;

/** The folders the service runs from, as the build script names them. */
const FOLDERS = JSON.parse(
  /const FOLDERS = (\[[^\]]+\])/
    .exec(readFileSync(join(ROOT, 'deploy/build.mjs'), 'utf8'))?.[1]
    ?.replaceAll("'", '"') ?? '[]',
) as string[];

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? filesUnder(join(dir, entry.name))
      : entry.isFile()
        ? [join(dir, entry.name)]
        : [],
  );
}

test.after(async ({ service }) => {
  await service?.stop();
});

test('every file of the service has its built twin, and build/ holds nothing else', () => {
  build();
  assert.ok(FOLDERS.includes('server') && FOLDERS.includes('storage'), FOLDERS.join(', '));
  const expected = FOLDERS.flatMap((folder) => filesUnder(join(ROOT, folder)))
    .map((path) => relative(ROOT, path))
    .map((path) => (path.endsWith('.ts') ? `${path.slice(0, -3)}.js` : path))
    .sort();
  const built = FOLDERS.flatMap((folder) => filesUnder(join(BUILD, folder)))
    .map((path) => relative(BUILD, path))
    .sort();
  assert.equal(built, expected);
  // No built module imports TypeScript: a relative `.ts` import would need a loader.
  for (const path of built.filter((name) => name.endsWith('.js'))) {
    const text = readFileSync(join(BUILD, path), 'utf8');
    assert.not.match(text, /from ["']\.{1,2}\/[^"']*\.ts["']/, path);
    assert.not.match(text, /import\(["']\.{1,2}\/[^"']*\.ts["']\)/, path);
  }
});

test('a source changed, added or deleted is rebuilt or removed by the next build, and only it', () => {
  build();
  const source = join(ROOT, 'server/main.ts');
  const output = join(BUILD, 'server/main.js');
  const before = statSync(output).mtimeMs;
  const untouched = statSync(join(BUILD, 'server/app.js')).mtimeMs;
  // Touched (a checkout, an editor's save): its stamp differs, so it is built again.
  const now = new Date();
  execFileSync('touch', ['-d', now.toISOString(), source]);
  assert.match(build(), /1 file built/);
  assert.ok(statSync(output).mtimeMs >= before);
  assert.is(statSync(join(BUILD, 'server/app.js')).mtimeMs, untouched);
  assert.is(build(), '', 'nothing to do the second time');
});

test('the built service serves its documents, migrates its database and reads a large header on its thread', async (context) => {
  build();
  assert.ok(existsSync(join(BUILD, 'server/main.js')));
  const service = await startServiceProcess();
  context.service = service;
  const base = service.baseUrl;
  const llms = await fetch(`${base}/llms.txt`);
  assert.is(llms.status, 200);
  assert.match(await llms.text(), /\/protocol/);
  const call = async (method: string, path: string, token: string | null, body?: string) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        'content-type': path.includes('/files/') ? 'text/markdown' : 'application/json',
      },
      body,
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const agent = await call('POST', '/agents', null, JSON.stringify({ name: 'built' }));
  assert.is(agent.status, 201);
  const token = agent.body.api_token as string;
  const workspace = await call('POST', '/workspaces', token, JSON.stringify({ name: 'w' }));
  const id = workspace.body.workspace_id as string;
  // Past the inline bound (4 KiB), so the header thread reads it: the built thread's entry.
  const header = `---\ntitle: built\nnote: ${'n'.repeat(6000)}\n---\nbody\n`;
  const saved = await call('PUT', `/workspaces/${id}/files/big.md`, token, header);
  assert.is(saved.status, 201, JSON.stringify(saved.body));
  const rows = await call(
    'POST',
    '/index/sql',
    token,
    JSON.stringify({
      scope: 'own',
      sql: `select fields->>'title' as title from files where workspace_id = '${id}' and path = 'big.md'`,
    }),
  );
  assert.is(rows.status, 200, JSON.stringify(rows.body));
  assert.equal(rows.body.rows, [['built']]);
});

test.run();
