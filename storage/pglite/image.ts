import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Makes sure `dataDir` holds a PGlite database, without running initdb in this process.
 *
 * A first start ran initdb inside WebAssembly and took the serving process to ~900 MB RSS for
 * good (WebAssembly memory never shrinks). Instead a short-lived child process fills a staging
 * directory from an image of a freshly initialised database (~1 s), and this process then
 * opens it as it opens existing data (~300 MB). The image is made by the first such child
 * (initdb, ~4 s) and cached beside the installed PGlite, in node_modules/.cache, keyed by
 * PGlite's version: it is not shipped, because it is 4 MB of binary that must match the
 * installed PGlite exactly, and `npm install && npm start` makes it on first use.
 */
export async function preparePgliteDataDir(dataDir: string): Promise<void> {
  if (existsSync(join(dataDir, 'PG_VERSION'))) return;
  mkdirSync(dirname(resolve(dataDir)), { recursive: true });
  // Beside the target, so that the rename below is atomic: a start that fails half-way
  // leaves no half-made database behind.
  const staging = mkdtempSync(`${resolve(dataDir)}.new-`);
  try {
    await runImageMaker(staging, pgliteImagePath());
    try {
      // rename(2) replaces a missing or empty directory, never a full one.
      renameSync(staging, dataDir);
    } catch (error) {
      throw new Error(`${dataDir} exists and is not a PGlite database`, { cause: error });
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Where the image of a fresh database for the installed PGlite is cached. */
export function pgliteImagePath(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const packageDir = resolve(dirname(entry), '..');
  const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  // packageDir is node_modules/@electric-sql/pglite.
  return join(packageDir, '..', '..', '.cache', 'agent-service', `pglite-${version}.tar.gz`);
}

function runImageMaker(target: string, imagePath: string): Promise<void> {
  const maker = fileURLToPath(new URL('./image-maker.mjs', import.meta.url));
  const child = spawn(process.execPath, [maker, target, imagePath], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  return new Promise((resolvePromise, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) resolvePromise();
      else
        reject(
          new Error(
            `making a new PGlite database failed (${signal ?? `exit ${code}`}): ${stderr.trim()}`,
          ),
        );
    });
  });
}
