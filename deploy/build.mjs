/**
 * Builds the JavaScript that `npm start` runs, so that no TypeScript loader runs in the service
 * (a loader is a thread and a compiler in every process: ~30 MB and a slower start). Each
 * TypeScript file of the service's folders becomes one JavaScript file under build/, at the
 * same path, with its relative imports renamed `.ts` -> `.js` (TypeScript's
 * `rewriteRelativeImportExtensions`); every other file there (SQL migrations, documents, worker
 * threads already written in JavaScript, contract artifacts) is copied, so that a file found
 * next to the code (`new URL('./x', import.meta.url)`) is found next to the build too.
 *
 * Types are not checked here (`npm run check` does that): a file is transpiled on its own, as
 * tsx did. Only what changed since the last build is redone (a source whose modification time
 * or size differs from when it was built), and what no source makes any more is deleted from
 * build/, so running it before each start costs well under a second. `npm install` runs it
 * (`prepare`), and so does `npm start`.
 *
 * Plain JavaScript, so that it needs nothing but Node and the `typescript` package.
 */
import {
  mkdirSync,
  readdirSync,
  renameSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import process from 'node:process';

const ROOT = join(import.meta.dirname, '..');
const OUT = join(ROOT, 'build');
/** The folders the service runs from (test/, bench/ and deploy/ run from source with tsx). */
const FOLDERS = ['server', 'actors', 'machines', 'storage', 'protocol'];

/** Every file under `dir`, as paths relative to ROOT. */
function filesUnder(dir) {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(path);
    return entry.isFile() ? [path] : [];
  });
}

/** Where a source file goes under build/. */
function outputOf(source) {
  const compiled = source.endsWith('.ts') && !source.endsWith('.d.ts');
  return join(OUT, compiled ? `${source.slice(0, -3)}.js` : source);
}

/** A source as it was when built: its modification time and size (a restored older copy counts). */
const stampOf = (path) => {
  try {
    const stat = statSync(path);
    return `${stat.mtimeMs}:${stat.size}`;
  } catch {
    return null;
  }
};

/**
 * Writes a file whole or not at all (a temporary file renamed over it), so that a service
 * starting while another build runs (two test workers, say) never loads half a file.
 */
function writeWhole(path, content) {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, content);
  renameSync(temporary, path);
}

/** What each output was built from (build/.sources.json). */
const MANIFEST = join(OUT, '.sources.json');
let built = {};
try {
  built = JSON.parse(readFileSync(MANIFEST, 'utf8'));
} catch {
  built = {};
}

const sources = FOLDERS.flatMap(filesUnder).filter((source) => !source.endsWith('.d.ts'));
const stamps = Object.fromEntries(sources.map((source) => [source, stampOf(join(ROOT, source))]));
const stale = sources.filter(
  (source) => built[source] !== stamps[source] || stampOf(outputOf(source)) === null,
);

let ts = null;
for (const source of stale) {
  const output = outputOf(source);
  mkdirSync(dirname(output), { recursive: true });
  if (!source.endsWith('.ts')) {
    writeWhole(output, readFileSync(join(ROOT, source)));
    continue;
  }
  ts ??= (await import('typescript')).default;
  const { outputText } = ts.transpileModule(readFileSync(join(ROOT, source), 'utf8'), {
    fileName: source,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      // ES modules, as package.json's `"type": "module"` makes every file (transpiling one file
      // alone, NodeNext could not know that).
      module: ts.ModuleKind.ESNext,
      verbatimModuleSyntax: true,
      rewriteRelativeImportExtensions: true,
      esModuleInterop: true,
    },
  });
  writeWhole(output, outputText);
}

// What no source makes any more (a file deleted or renamed) goes, so that nothing stale loads.
const wanted = new Set(sources.map(outputOf));
let removed = 0;
for (const folder of FOLDERS) {
  if (stampOf(join(OUT, folder)) === null) continue;
  for (const output of filesUnder(relative(ROOT, join(OUT, folder)))) {
    // A `.tmp` is another build's file on its way to its name: not stale.
    if (!wanted.has(join(ROOT, output)) && !output.endsWith('.tmp')) {
      rmSync(join(ROOT, output), { force: true });
      removed++;
    }
  }
}
if (stale.length > 0 || removed > 0) writeWhole(MANIFEST, JSON.stringify(stamps));

if (stale.length > 0 || removed > 0) {
  process.stderr.write(
    `build: ${stale.length} file${stale.length === 1 ? '' : 's'} built, ${removed} removed, in build/\n`,
  );
}
