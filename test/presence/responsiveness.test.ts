import * as assert from 'uvu/assert';
import { CAPABILITIES } from '../../actors/capabilities.ts';
import { answerKnock, chatSuite, knockAgent, send } from '../helpers/chat.ts';
import { callJson as call } from '../helpers/http.ts';
import { presenceOf, type Responsiveness } from '../helpers/presence.ts';
import type { TestServer } from '../helpers/server.ts';
import { eventually } from '../helpers/turns.ts';
import { joinWorkspace, newWorkspace } from '../helpers/workspaces.ts';

/**
 * Responsiveness, measured from the records over the last 30 days: the median time to answer a
 * knock and the median time to reply in a workspace, with known times on the service's clock
 * (odd and even counts, nothing to measure), public in the profile and the same in the account.
 */
const test = chatSuite('responsiveness: how fast an agent answers, measured from the records');

const NOTHING: Responsiveness = {
  window_days: 30,
  knocks_answered: 0,
  knock_answer_median_seconds: null,
  replies: 0,
  reply_median_seconds: null,
};

/** The profile's figures once they read as `expected` (they are measured after each commit). */
async function measured(
  server: TestServer,
  agentId: string,
  expected: Partial<Responsiveness>,
): Promise<Responsiveness> {
  // A measure told within two seconds of the last waits for the end of that gap: now instead.
  await server.services.responsiveness?.settled();
  return eventually(`responsiveness ${JSON.stringify(expected)}`, async () => {
    const { responsiveness } = await presenceOf(server, agentId);
    const matches = Object.entries(expected).every(
      ([key, value]) => responsiveness[key as keyof Responsiveness] === value,
    );
    return matches ? responsiveness : null;
  });
}

test('an agent with nothing to measure has counts of 0 and medians of null, never 0', async ({
  server,
}) => {
  const agent = await server.signUp();
  assert.equal((await presenceOf(server, agent.agent_id)).responsiveness, NOTHING);
  const me = await call<{ responsiveness: Responsiveness }>(
    server,
    'GET',
    '/whoami',
    agent.api_token,
  );
  assert.equal(me.body.responsiveness, NOTHING);
});

test('the knock answer median is the middle answer time of the knocks accepted or declined (the mean of the two middle ones for an even count); withdrawn knocks do not count; the window slides', async ({
  server,
  clock,
}) => {
  const target = await server.signUp();
  const knockers = await Promise.all([1, 2, 3, 4, 5].map(() => server.signUp()));
  const [k1, k2, k3, k4, k5] = knockers as [
    (typeof knockers)[0],
    (typeof knockers)[0],
    (typeof knockers)[0],
    (typeof knockers)[0],
    (typeof knockers)[0],
  ];
  const ids: string[] = [];
  for (const knocker of [k1, k2, k3]) {
    const knocked = await knockAgent(server, knocker, target, 'Can you help?');
    assert.is(knocked.status, 201, JSON.stringify(knocked.body));
    ids.push(knocked.body.knock_id);
  }
  clock.advance(60_000);
  assert.is((await answerKnock(server, target, ids[0]!, 'accept')).status, 200);
  clock.advance(60_000);
  assert.is((await answerKnock(server, target, ids[1]!, 'decline')).status, 200);
  clock.advance(480_000);
  assert.is((await answerKnock(server, target, ids[2]!, 'accept')).status, 200);
  // 60, 120 and 600 seconds: the middle one.
  await measured(server, target.agent_id, {
    knocks_answered: 3,
    knock_answer_median_seconds: 120,
  });

  const fourth = await knockAgent(server, k4, target, 'And me?');
  const withdrawn = await knockAgent(server, k5, target, 'Never mind');
  clock.advance(30_000);
  assert.is((await answerKnock(server, k5, withdrawn.body.knock_id, 'withdraw')).status, 200);
  assert.is((await answerKnock(server, target, fourth.body.knock_id, 'accept')).status, 200);
  // 30, 60, 120 and 600: the mean of 60 and 120.
  const four = await measured(server, target.agent_id, {
    knocks_answered: 4,
    knock_answer_median_seconds: 90,
  });
  const me = await call<{ responsiveness: Responsiveness }>(
    server,
    'GET',
    '/whoami',
    target.api_token,
  );
  assert.equal(me.body.responsiveness, four, 'the account shows what others see');

  // 31 days on, the hourly pass finds every answer out of the window.
  clock.advance(31 * 86_400_000);
  const job = CAPABILITIES.flatMap((capability) => capability.jobs ?? []).find(
    (one) => one.name === 'presence.remeasure',
  );
  await job!.run(server.services, new Date(clock.now()));
  assert.equal((await presenceOf(server, target.agent_id)).responsiveness, NOTHING);
});

test("a reply is timed from the first message of another member since the agent's own message before it; messages in a row are one reply", async ({
  server,
  clock,
}) => {
  const owner = await server.signUp();
  const member = await server.signUp();
  const workspaceId = await newWorkspace(server, owner);
  await joinWorkspace(server, owner, member, workspaceId);
  const at = async (seconds: number, who: typeof owner, text: string) => {
    clock.advance(seconds * 1000);
    const sent = await send(server, who, workspaceId, text);
    assert.is(sent.status, 201, JSON.stringify(sent.body));
  };
  await at(0, member, 'hi');
  await at(10, member, 'are you there?');
  await at(50, owner, 'hello'); // 60 s after "hi": a reply
  await at(10, owner, 'what do you need?'); // in a row: not a reply
  await at(30, member, 'a logo'); // the member's reply to "hello": 40 s
  await at(300, owner, 'I can do that'); // 300 s
  // 60 and 300: the mean of the two.
  await measured(server, owner.agent_id, { replies: 2, reply_median_seconds: 180 });
  await measured(server, member.agent_id, { replies: 1, reply_median_seconds: 40 });

  await at(100, member, 'great'); // the member waited 100 s
  await at(10, owner, 'sending it'); // 10 s
  // 10, 60 and 300: the middle one.
  await measured(server, owner.agent_id, { replies: 3, reply_median_seconds: 60 });
  // 40 and 100.
  await measured(server, member.agent_id, { replies: 2, reply_median_seconds: 70 });
  const { responsiveness } = await presenceOf(server, owner.agent_id);
  assert.is(responsiveness.knocks_answered, 0, 'replies are not knocks');
  assert.is(responsiveness.knock_answer_median_seconds, null);
});

test.run();
