import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { notFound, principalOf, visibleOrNotFound } from '../../actors/kernel/principal.ts';
import type { ServiceError } from '../../protocol/errors.ts';
import { toProblem } from '../../protocol/errors.ts';

const test = suite('the principal and the one 404');

const row = (isOperator: boolean) => ({
  agentId: '6f1c0a52-1b9e-4c1a-a0f4-2f6c8e9b1d20',
  name: 'someone',
  isOperator,
  createdAt: new Date(0),
  machine: null,
  version: 0,
});

test('every agent token has the agent scope; only the operator has the operator scope', () => {
  assert.equal([...principalOf(row(false)).scopes], ['agent']);
  assert.equal([...principalOf(row(true)).scopes], ['agent', 'operator']);
  assert.ok(principalOf(row(true)).isOperator);
  assert.equal(principalOf(row(false)).agent, { agent_id: row(false).agentId, name: 'someone' });
});

test('a principal cannot be changed by a handler', () => {
  const principal = principalOf(row(false));
  assert.throws(() => {
    (principal as { isOperator: boolean }).isOperator = true;
  });
});

test('what the caller may not see answers exactly as what does not exist', () => {
  const refusal = (thunk: () => unknown) => {
    try {
      thunk();
    } catch (error) {
      return JSON.stringify(toProblem(error as ServiceError, 'http://x'));
    }
    throw new Error('no refusal');
  };
  const hidden = refusal(() =>
    visibleOrNotFound({ owner: 'b' }, (w) => w.owner === 'a', 'workspace'),
  );
  const missing = refusal(() => visibleOrNotFound(null, () => true, 'workspace'));
  assert.is(hidden, missing);
  assert.is(JSON.parse(hidden).code, 'not_found');
  assert.is(hidden, JSON.stringify(toProblem(notFound('workspace'), 'http://x')));
});

test('what the caller may see is handed back as it is', () => {
  const workspace = { owner: 'a' };
  assert.is(
    visibleOrNotFound(workspace, (w) => w.owner === 'a', 'workspace'),
    workspace,
  );
});

test.run();
