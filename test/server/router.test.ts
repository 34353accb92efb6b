import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ServiceError } from '../../protocol/errors.ts';
import { Router } from '../../server/http/router.ts';

const test = suite('router');

function router(): Router<string> {
  const routes = new Router<string>();
  routes.add('GET', '/changes', 'changes');
  routes.add('GET', '/changes/wait', 'wait');
  routes.add('GET', '/changes/:id', 'change');
  routes.add('POST', '/feedback/:feedback_id/answer', 'answer');
  routes.add('GET', '/workspaces/:workspace_id/files', 'list');
  routes.add('GET', '/workspaces/:workspace_id/files/*path', 'read');
  routes.add('PUT', '/workspaces/:workspace_id/files/*path', 'write');
  routes.add('GET', '/workspaces/:workspace_id/files/special', 'special');
  return routes;
}

function refusal(run: () => unknown): ServiceError {
  try {
    run();
  } catch (error) {
    if (error instanceof ServiceError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

test('a static path beats a parameter, and a parameter beats a rest parameter', () => {
  const routes = router();
  assert.is(routes.match('GET', '/changes/wait').target, 'wait');
  assert.is(routes.match('GET', '/changes/42').target, 'change');
  assert.is(routes.match('GET', '/workspaces/w/files/special').target, 'special');
  assert.is(routes.match('GET', '/workspaces/w/files/other').target, 'read');
  assert.is(routes.match('GET', '/workspaces/w/files').target, 'list');
});

test('a rest parameter takes one or more segments, each decoded, joined by /', () => {
  const match = router().match('GET', '/workspaces/w%20x/files/notes/caf%C3%A9/a%20b.md');
  assert.is(match.target, 'read');
  assert.equal(match.params, { workspace_id: 'w x', path: 'notes/café/a b.md' });
});

test('a rest parameter needs at least one segment: without, nothing is there', () => {
  assert.is(refusal(() => router().match('GET', '/workspaces/w/files/')).code, 'not_found');
});

test('%2F in a single parameter is part of it, never a separator', () => {
  const match = router().match('POST', '/feedback/a%2Fb/answer');
  assert.is(match.target, 'answer');
  assert.equal(match.params, { feedback_id: 'a/b' });
  // Decoded first, `a/b/answer` would have had one segment too many to match at all.
  assert.is(refusal(() => router().match('POST', '/feedback/a/b/answer')).code, 'not_found');
});

test('%2F in a rest parameter is a `/`, in either case: the same file as plain slashes', () => {
  for (const path of [
    '/workspaces/w/files/a%2Fb/c.md',
    '/workspaces/w/files/a%2fb%2Fc.md',
    '/workspaces/w/files/a/b%2Fc.md',
  ]) {
    const match = router().match('GET', path);
    assert.is(match.target, 'read', path);
    assert.equal(match.params, { workspace_id: 'w', path: 'a/b/c.md' }, path);
  }
});

test('%2F in a single parameter never moves a route boundary or splits the parameter', () => {
  // `w%2Ffiles` is one workspace id (which no workspace has), not `w` followed by `/files`.
  assert.is(refusal(() => router().match('GET', '/workspaces/w%2Ffiles')).code, 'not_found');
  const match = router().match('GET', '/workspaces/w%2Fx/files/a.md');
  assert.equal(match.params, { workspace_id: 'w/x', path: 'a.md' });
});

test('an encoded .., ., empty segment or NUL is refused exactly as a plain one, with its rule', () => {
  const cases: [string, string][] = [
    ['a%2F..%2Fb', 'dot_segment'],
    ['..%2Fetc%2Fpasswd', 'dot_segment'],
    ['a%2F%2E%2E', 'dot_segment'],
    ['a%2F.%2Fb', 'dot_segment'],
    ['a%2F%2Fb', 'empty_segment'],
    ['a%2F', 'empty_segment'],
    ['%2Fetc', 'leading_slash'],
    ['a%2F%00', 'control_character'],
    ['a%5C..%5Cb', 'backslash'],
    ['a%E2%88%95..%E2%88%95b', 'lookalike_separator'],
  ];
  for (const [path, rule] of cases) {
    const error = refusal(() => router().match('PUT', `/workspaces/w/files/${path}`));
    assert.is(error.code, 'invalid_path', path);
    assert.equal(error.extra, { field: 'path', rule }, path);
  }
});

test('NUL in a rest parameter is refused', () => {
  const error = refusal(() => router().match('PUT', '/workspaces/w/files/a%00b'));
  assert.is(error.code, 'invalid_path');
  assert.match(error.message, /NUL/);
});

test('., .. and empty segments in a rest parameter are refused, also percent-encoded', () => {
  for (const path of [
    '/workspaces/w/files/..',
    '/workspaces/w/files/a/../b',
    '/workspaces/w/files/./a',
    '/workspaces/w/files/a/%2E%2E/b',
    '/workspaces/w/files/a/%2e',
    '/workspaces/w/files/a//b',
    '/workspaces/w/files/a/',
  ]) {
    assert.is(refusal(() => router().match('GET', path)).code, 'invalid_path', path);
  }
});

test('dots inside a segment are an ordinary name', () => {
  const match = router().match('GET', '/workspaces/w/files/.hidden/a..b/...');
  assert.equal(match.params.path, '.hidden/a..b/...');
});

test('malformed percent-encoding is refused as invalid input', () => {
  assert.is(
    refusal(() => router().match('GET', '/workspaces/w/files/a%E0%A4')).code,
    'invalid_input',
  );
  assert.is(refusal(() => router().match('GET', '/changes/%zz')).code, 'invalid_input');
});

test('a path under another method answers 405 naming the methods it takes', () => {
  const error = refusal(() => router().match('DELETE', '/workspaces/w/files/a.md'));
  assert.is(error.code, 'method_not_allowed');
  assert.equal(error.extra.allow, ['GET', 'HEAD', 'PUT']);
});

test.run();
