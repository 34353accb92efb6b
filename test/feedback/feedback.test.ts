import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

interface Page {
  changes: { type: string; actor?: { agent_id: string }; data: Record<string, unknown> }[];
  cursor: string;
}

const test = suite<{ server: TestServer; operatorToken: string }>(
  'feedback reaches the operator and its answer comes back',
);

test.before(async (context) => {
  context.operatorToken = newToken();
  context.server = await startTestServer({ operatorToken: context.operatorToken });
});
test.after(async ({ server }) => {
  await server.close();
});

/** Every event of the agent's feed from the start, by type. */
async function feedOf(server: TestServer, token: string, type: string) {
  const page = (await (await server.get('/changes?after=c0&limit=500', token)).json()) as Page;
  return page.changes.filter((change) => change.type === type);
}

test('the operator signs in with OPERATOR_TOKEN under its configured name', async ({
  server,
  operatorToken,
}) => {
  const me = (await (await server.get('/whoami', operatorToken)).json()) as {
    name: string;
    agent_id: string;
  };
  assert.is(me.name, 'service');
  assert.is(me.agent_id, server.services.operatorId);
});

test('feedback lands in the operator feed with its text as data, and the answer in the sender feed', async ({
  server,
  operatorToken,
}) => {
  const agent = await server.signUp();
  const sent = (await (
    await server.post(
      '/feedback',
      { message: 'Can I pay in EUR?', category: 'question' },
      agent.api_token,
    )
  ).json()) as {
    feedback_id: string;
  };
  const submitted = (await feedOf(server, operatorToken, 'feedback.submitted')).find(
    (c) => c.data.feedback_id === sent.feedback_id,
  );
  assert.ok(submitted, 'the operator was told');
  assert.is(submitted.data.message, 'Can I pay in EUR?');
  assert.is(submitted.actor?.agent_id, agent.agent_id);

  const answered = await server.post(
    `/feedback/${sent.feedback_id}/answer`,
    { answer: 'Only USDC is verified.' },
    operatorToken,
  );
  assert.is(answered.status, 201);
  assert.is(((await answered.json()) as { delivered: boolean }).delivered, true);
  const [answer] = await feedOf(server, agent.api_token, 'feedback.answered');
  assert.equal(answer?.data, {
    feedback_id: sent.feedback_id,
    answer: 'Only USDC is verified.',
    from_operator: true,
  });
  assert.is(answer?.actor?.agent_id, server.services.operatorId);
});

test('an answer to anonymous feedback is recorded but has nobody to reach', async ({
  server,
  operatorToken,
}) => {
  const sent = (await (
    await server.post('/feedback', { message: 'anon', category: 'idea' })
  ).json()) as { feedback_id: string };
  const answered = await server.post(
    `/feedback/${sent.feedback_id}/answer`,
    { answer: 'thanks' },
    operatorToken,
  );
  assert.is(((await answered.json()) as { delivered: boolean }).delivered, false);
});

test('to anyone but the operator, answering feedback is no route at all: 404 as for an unknown path', async ({
  server,
}) => {
  const agent = await server.signUp();
  const sent = (await (
    await server.post('/feedback', { message: 'mine', category: 'bug' }, agent.api_token)
  ).json()) as {
    feedback_id: string;
  };
  const path = `/feedback/${sent.feedback_id}/answer`;
  const asAgent = await server.post(path, { answer: 'self-answer' }, agent.api_token);
  const anonymous = await server.post(path, { answer: 'self-answer' });
  const badToken = await server.post(path, { answer: 'self-answer' }, 'asvc_nonsense');
  const unknownPath = await server.post(`/feedback/${sent.feedback_id}/answers`, { answer: 'x' });
  assert.is(asAgent.status, 404);
  const body = await asAgent.text();
  assert.is(await anonymous.text(), body, 'no token: not a 401 that would tell the route exists');
  assert.is(await badToken.text(), body);
  const unknownDetail = ((await unknownPath.json()) as { detail: string }).detail;
  assert.is(
    (JSON.parse(body) as { detail: string }).detail,
    unknownDetail.replace('/answers', '/answer'),
    'the same words as for a path that does not exist',
  );
  assert.is((await feedOf(server, agent.api_token, 'feedback.answered')).length, 0);
});

test('the operator gets 404 for an unknown feedback id and 400 for a malformed one', async ({
  server,
  operatorToken,
}) => {
  const unknown = await server.post(
    '/feedback/6f1c0a52-1b9e-4c1a-a0f4-2f6c8e9b1d20/answer',
    { answer: 'x' },
    operatorToken,
  );
  assert.is(unknown.status, 404);
  const malformed = await server.post(
    '/feedback/not-a-uuid/answer',
    { answer: 'x' },
    operatorToken,
  );
  assert.is(malformed.status, 400);
  assert.is(((await malformed.json()) as { field: string }).field, 'feedback_id');
});

test.run();
