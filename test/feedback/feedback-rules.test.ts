import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { directDoor, type DirectDoor } from '../helpers/direct.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Feedback reaches the operator and its answer comes back, through the direct door:
 * feedback.test.ts keeps what the HTTP door answers to anyone else.
 */
const test = suite<{ server: TestServer; door: DirectDoor; operatorToken: string }>(
  'feedback reaches the operator and its answer comes back, without a transport',
);

test.before(async (context) => {
  context.operatorToken = newToken();
  context.server = await startTestServer({ operatorToken: context.operatorToken });
  context.door = directDoor(context.server.services);
});
test.after(async ({ server }) => {
  await server.close();
});

/** Every event of the agent's feed from the start, by type. */
async function feedOf(door: DirectDoor, token: string, type: string) {
  const page = await door.call('changes', { after: 'c0', limit: 500 }, token);
  return page.changes.filter((change) => change.type === type);
}

test('the operator signs in with OPERATOR_TOKEN under its configured name', async ({
  server,
  door,
  operatorToken,
}) => {
  const me = await door.call('whoami', {}, operatorToken);
  assert.is(me.name, 'service');
  assert.is(me.agent_id, server.services.operatorId);
});

test('feedback lands in the operator feed with its text as data, and the answer in the sender feed', async ({
  server,
  door,
  operatorToken,
}) => {
  const agent = await door.signUp();
  const sent = await door.call(
    'leave_feedback',
    { message: 'Can I pay in EUR?', category: 'question' },
    agent.api_token,
  );
  const submitted = (await feedOf(door, operatorToken, 'feedback.submitted')).find(
    (c) => c.data.feedback_id === sent.feedback_id,
  );
  assert.ok(submitted, 'the operator was told');
  assert.is(submitted.data.message, 'Can I pay in EUR?');
  assert.is(submitted.actor?.agent_id, agent.agent_id);

  const answered = await door.call(
    'answer_feedback',
    { feedback_id: sent.feedback_id, answer: 'Only USDC is verified.' },
    operatorToken,
  );
  assert.is(answered.delivered, true);
  const [answer] = await feedOf(door, agent.api_token, 'feedback.answered');
  assert.equal(answer?.data, {
    feedback_id: sent.feedback_id,
    answer: 'Only USDC is verified.',
    from_operator: true,
  });
  assert.is(answer?.actor?.agent_id, server.services.operatorId);
});

test('an answer to anonymous feedback is recorded but has nobody to reach', async ({
  door,
  operatorToken,
}) => {
  const sent = await door.call('leave_feedback', { message: 'anon', category: 'idea' });
  const answered = await door.call(
    'answer_feedback',
    { feedback_id: sent.feedback_id, answer: 'thanks' },
    operatorToken,
  );
  assert.is(answered.delivered, false);
});

test('the operator gets 404 for an unknown feedback id and 400 for a malformed one', async ({
  door,
  operatorToken,
}) => {
  const unknown = await door.refusal(
    'answer_feedback',
    { feedback_id: '6f1c0a52-1b9e-4c1a-a0f4-2f6c8e9b1d20', answer: 'x' },
    operatorToken,
  );
  assert.is(unknown.code, 'not_found');
  const malformed = await door.refusal(
    'answer_feedback',
    { feedback_id: 'not-a-uuid', answer: 'x' },
    operatorToken,
  );
  assert.is(malformed.code, 'invalid_input');
  assert.is(malformed.extra.field, 'feedback_id');
});

test.run();
