import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Operation } from '../protocol/operation.ts';
import { ERRORS } from '../protocol/errors.ts';
import { OPERATION_LIST } from '../protocol/operations.ts';

/**
 * Every operation is called by at least one test, and every error code is met by one. The tests' text is read, not run: an
 * operation counts as called where a test names it in quotes (an MCP tool, the direct door of
 * test/helpers/direct.ts) or writes a path its route matches. Routes that share a path (GET and
 * POST /workspaces) are told apart by the method written in the same statement.
 */

const root = import.meta.dirname;

function testSources(dir: string): { file: string; text: string }[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return testSources(path);
      if (!name.endsWith('.ts') || path === import.meta.filename) return [];
      return [{ file: relative(root, path), text: readFileSync(path, 'utf8') }];
    });
}

/** A placeholder segment of a template literal (`${workspaceId}`): any value. */
const ANY = '\u0000any';

interface PathUse {
  segments: string[];
  /** The method written in the statement that holds the path, if one is. */
  method: string | undefined;
}

/** Every string or template literal that starts with `/`, as segments, with its method. */
function pathUses(text: string): PathUse[] {
  const uses: PathUse[] = [];
  for (const start of text.matchAll(/['"`]\//g)) {
    const quote = start[0][0] as string;
    const from = (start.index as number) + 1;
    const literal = literalAt(text, from, quote);
    const path = literal.replace(/[?#].*$/s, '');
    uses.push({
      segments: path
        .split('/')
        .slice(1)
        .map((segment) => (/^\$\{[^}]*\}$/.test(segment) ? ANY : segment)),
      method: methodAround(text, from - 1, from + literal.length + 1),
    });
  }
  return uses;
}

/** The text of the literal opened with `quote` before `from`; `${...}` kept as written. */
function literalAt(text: string, from: number, quote: string): string {
  let at = from;
  let depth = 0;
  while (at < text.length) {
    const char = text[at] as string;
    if (depth === 0 && (char === quote || char === '\n')) break;
    if (quote === '`' && text.startsWith('${', at)) depth++;
    else if (depth > 0 && char === '}') depth--;
    at++;
  }
  return text.slice(from, at);
}

const METHOD_BEFORE = /['"](GET|POST|PUT|DELETE|HEAD)['"]|\.(get|post|put|delete)\(/gi;
const METHOD_AFTER = /method:\s*['"](GET|POST|PUT|DELETE|HEAD)['"]/i;

/** The method named nearest before the literal, or after it, within its statement. */
function methodAround(text: string, start: number, end: number): string | undefined {
  const before = text.slice(Math.max(0, start - 160), start);
  const statementBefore = before.slice(before.lastIndexOf(';') + 1);
  const named = [...statementBefore.matchAll(METHOD_BEFORE)].at(-1);
  if (named) return (named[1] ?? named[2] ?? '').toUpperCase();
  const after = text.slice(end, end + 240);
  const statementAfter = after.slice(0, after.includes(';') ? after.indexOf(';') : undefined);
  return METHOD_AFTER.exec(statementAfter)?.[1]?.toUpperCase();
}

/** Whether a path written in a test matches the route (`:name` one segment, `*name` the rest). */
function routeMatches(route: string, used: string[]): boolean {
  const segments = route.split('/').slice(1);
  for (const [index, segment] of segments.entries()) {
    if (segment.startsWith('*')) return used.length > index;
    const written = used[index];
    if (written === undefined || written === '') return false;
    if (segment.startsWith(':') || written === ANY || written === segment) continue;
    // `/knocks${query}`: the placeholder is a query string.
    if (written.startsWith(`${segment}\${`)) continue;
    return false;
  }
  return used.length === segments.length;
}

/** The operations a path use calls: where several share the route, the one its method names. */
function calledBy(use: PathUse): Operation[] {
  const matching = OPERATION_LIST.filter((operation) => routeMatches(operation.path, use.segments));
  const methods = new Set(matching.map((operation) => operation.method));
  if (methods.size <= 1) return matching;
  const method = use.method === 'HEAD' ? 'GET' : use.method;
  return matching.filter((operation) => operation.method === method);
}

test('every operation is called by at least one test, by its name or its route', () => {
  const sources = testSources(root);
  const called = new Map<string, string>();
  for (const { file, text } of sources) {
    for (const operation of OPERATION_LIST) {
      if (new RegExp(`['"\`]${operation.name}['"\`]`).test(text)) called.set(operation.name, file);
    }
    for (const use of pathUses(text)) {
      for (const operation of calledBy(use)) called.set(operation.name, file);
    }
  }
  const untested = OPERATION_LIST.filter((operation) => !called.has(operation.name)).map(
    (operation) => `${operation.name} (${operation.method} ${operation.path})`,
  );
  assert.equal(untested, [], `operations no test calls: ${untested.join(', ')}`);
});

test('every error code is met by at least one test: named in quotes, or after its status', () => {
  const text = testSources(root)
    .map((source) => source.text)
    .join('\n');
  const unmet = Object.keys(ERRORS).filter(
    (code) => !new RegExp(`(?:['"\`]|\\b\\d{3} )${code}(?:['"\`]|\\b)`).test(text),
  );
  assert.equal(unmet, [], `error codes no test meets: ${unmet.join(', ')}`);
});

test('the scan tells routes that share a path apart by their method', () => {
  const uses = pathUses(
    [
      "await call(server, 'POST', `/workspaces/${id}/invites`, token);",
      "await fetch(server.url(`/workspaces/${id}/files/${path}`), { method: 'DELETE' });",
      'await listKnocks(`/knocks${query}`);',
    ].join('\n'),
  );
  assert.equal(
    uses.map((use) => calledBy(use).map((operation) => operation.name)),
    [['create_invite'], ['delete_file'], ['list_knocks']],
  );
});

test.run();
