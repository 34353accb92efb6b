import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

interface Page {
  changes: { type: string; actor?: { agent_id: string }; data: Record<string, unknown> }[];
  cursor: string;
}

/**
 * What the HTTP door answers anyone but the operator who answers feedback: no route at all (the
 * feedback rules are in feedback-rules.test.ts, through the direct door).
 */
const test = suite<{ server: TestServer; operatorToken: string }>(
  'answering feedback is no route to anyone but the operator, through HTTP',
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

test.run();
