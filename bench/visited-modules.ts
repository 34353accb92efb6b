/**
 * Which of the service's modules run while it serves one markdown save and one agreement (the
 * maps in docs/architecture.md, "Two writes, file by file"): V8's function counts, reset when
 * taken, read just before and just after each request. A module is visited when one of its
 * functions ran; tests, benches and node_modules are left out. Not a timing: prints files and folders.
 *
 *   NODE_V8_COVERAGE=$(mktemp -d) node --import tsx bench/visited-modules.ts
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { takeCoverage } from 'node:v8';
import { startBenchServer } from './bench-server.ts';

const root = join(import.meta.dirname, '..');
const coverage = process.env.NODE_V8_COVERAGE;
if (!coverage) throw new Error('Run with NODE_V8_COVERAGE=<an empty directory>.');

interface ScriptCoverage {
  url: string;
  functions: { ranges: { count: number }[] }[];
}

/** The modules that ran since the last call (taking the coverage resets V8's counters). */
function ranSinceLast(): string[] {
  for (const file of readdirSync(coverage!)) rmSync(join(coverage!, file));
  takeCoverage();
  const ran = new Set<string>();
  for (const file of readdirSync(coverage!)) {
    const { result } = JSON.parse(readFileSync(join(coverage!, file), 'utf8')) as {
      result: ScriptCoverage[];
    };
    for (const script of result) {
      if (!script.url.startsWith('file://')) continue;
      const path = relative(root, fileURLToPath(script.url));
      if (/^(\.\.|node_modules|test|bench)\//.test(path)) continue;
      if (script.functions.some((fn) => (fn.ranges[0]?.count ?? 0) > 0)) ran.add(path);
    }
  }
  return [...ran].sort();
}

async function visited(label: string, request: () => Promise<unknown>) {
  ranSinceLast();
  await request();
  const files = ranSinceLast();
  const folders = [...new Set(files.map((file) => dirname(file)))].sort();
  console.log(`${label}: ${files.length} files in ${folders.length} folders`);
  console.log(`  folders: ${folders.join(', ')}`);
  console.log(`  files: ${files.join(', ')}`);
}

const server = await startBenchServer();
const [a, b] = [await server.signUp(), await server.signUp()];
const call = async (method: string, path: string, token: string, body: unknown, type?: string) => {
  const answer = await fetch(server.url(path), {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': type ?? 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  if (!answer.ok) throw new Error(`${method} ${path}: ${answer.status} ${await answer.text()}`);
  return (await answer.json()) as Record<string, unknown> & { receipt?: Record<string, unknown> };
};
const { workspace_id } = await call('POST', '/workspaces', a.api_token, {});
const { invite_token } = await call('POST', `/workspaces/${workspace_id}/invites`, a.api_token, {});
await call('POST', '/invites/redeem', b.api_token, { invite_token });
const save = (path: string, text: string) =>
  call('PUT', `/workspaces/${workspace_id}/files/${path}`, a.api_token, text, 'text/markdown');
const deal = (n: number) =>
  [
    '---',
    `deal: "Logo ${n}"`,
    'parties:',
    ...[a, b].flatMap((agent) => [
      `  - agent_id: "${agent.agent_id}"`,
      '    need: "x"',
      '    can: "y"',
    ]),
    '---',
    `Terms ${n}.`,
  ].join('\n');
const agree = (path: string, receipt: Record<string, unknown> | undefined) =>
  call('POST', '/deals/agree', a.api_token, {
    workspace_id,
    path,
    version: receipt?.version,
    sha256: receipt?.sha256,
  });
// The first of each loads modules on demand: warm both before counting.
await save('warm.md', '# Warm\n\nLoads what a save loads.');
await agree('warm-deal.md', (await save('warm-deal.md', deal(0))).receipt);
await visited('a markdown save (PUT)', () => save('notes.md', '# Notes\n\nSaved once.'));
const saved = await save('deal.md', deal(1));
await visited('an agreement (POST /deals/agree)', () => agree('deal.md', saved.receipt));
await server.close();
