import type { Socket } from 'socket.io-client';
import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { changesUntil } from '../helpers/changes.ts';
import { TestClock } from '../helpers/clock.ts';
import { callJson } from '../helpers/http.ts';
import { openSocket, serverSuite } from '../helpers/server-suite.ts';
import { madeToken, revokeToken, rotateToken } from '../helpers/tokens.ts';
import { turnsUntil } from '../helpers/turns.ts';
import type { Change, ChangesPage, Problem } from '../helpers/wire-types.ts';
import { newWorkspace, saveFile } from '../helpers/workspaces.ts';

/**
 * The socket.io door holds a restricted token to its scopes as the HTTP door does: a workspace
 * token's socket receives only that workspace's changes, a restricted token's `ack` moves its
 * own place and never the agent's, and a socket whose token stops working (revoked, rotated
 * out, expired, its agent suspended) is disconnected at once; its reconnection is refused with
 * `data.code` and `data.reason`. Time moves only by the test's clock.
 */
const test = serverSuite<{ clock: TestClock; operatorToken: string }>(
  'token doors: socket.io holds restricted tokens to their scopes',
  () => {
    const clock = new TestClock();
    const operatorToken = newToken();
    return { extra: { clock, operatorToken }, config: { clock, operatorToken } };
  },
);

const HOUR_MS = 3_600_000;

type RefusedProblem = Problem & { reason?: string };

const connected = (socket: Socket) =>
  new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', (error) => reject(error));
  });

const disconnected = (socket: Socket) =>
  new Promise<string>((resolve) => socket.once('disconnect', (reason) => resolve(reason)));

const refusal = (socket: Socket) =>
  new Promise<RefusedProblem>((resolve) =>
    socket.once('connect_error', (error) => resolve((error as { data: RefusedProblem }).data)),
  );

/** The change events the socket receives from now until the `count`th of `type`, included. */
function changesThrough(socket: Socket, type: string, count: number): Promise<Change[]> {
  return new Promise((resolve) => {
    const seen: Change[] = [];
    const listener = (event: Change) => {
      seen.push(event);
      if (seen.filter((change) => change.type === type).length === count) {
        socket.off('change', listener);
        resolve(seen);
      }
    };
    socket.on('change', listener);
  });
}

/** Leaves feedback as `token`: a `feedback.received` change in the agent's feed. */
async function leaveFeedback(context: { server: Parameters<typeof callJson>[0] }, token: string) {
  const posted = await callJson(context.server, 'POST', '/feedback', token, {
    category: 'other',
    message: 'a change to read',
  });
  assert.is(posted.status, 202, JSON.stringify(posted.body));
}

/** The changes the full token has not read (reading moves the agent's remembered place). */
async function agentPage(
  context: { server: Parameters<typeof callJson>[0] },
  token: string,
  after?: string,
) {
  const path = after === undefined ? '/changes?limit=500' : `/changes?limit=500&after=${after}`;
  const page = await callJson<ChangesPage>(context.server, 'GET', path, token);
  assert.is(page.status, 200, JSON.stringify(page.body));
  return page.body;
}

test('a socket made with a workspace token receives only that workspace changes, live and replayed', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const mine = await newWorkspace(server, agent);
  const other = await newWorkspace(server, agent);
  const start = await agentPage(context, agent.api_token);
  const scoped = await madeToken(server, agent.api_token, {
    name: 'one workspace',
    scopes: [`workspace:${mine}`],
  });

  const socket = openSocket(context, scoped.api_token);
  await connected(socket);
  const live = changesUntil<Change>(socket, 'file.saved');
  await saveFile(server, agent, other, 'elsewhere.md', 'not for this token');
  await saveFile(server, agent, mine, 'here.md', 'for this token');
  const pushed = await live;
  assert.equal(
    pushed.map((change) => [change.type, change.workspace_id, change.data.path]),
    [['file.saved', mine, 'here.md']],
  );

  // A replay from an older cursor passes over the other workspace too.
  const replay = openSocket(context, scoped.api_token, start.cursor);
  const replayed = await changesUntil<Change>(replay, 'file.saved');
  assert.equal(
    replayed.map((change) => [change.type, change.workspace_id, change.data.path]),
    [['file.saved', mine, 'here.md']],
  );
  // The full token's socket sees both: the scoped socket's silence was its scope.
  const full = openSocket(context, agent.api_token, start.cursor);
  const both = await changesThrough(full, 'file.saved', 2);
  assert.equal(
    both.filter((c) => c.type === 'file.saved').map((c) => c.workspace_id),
    [other, mine],
  );
});

test('a read token socket acks its own place and the agent remembered place stays where it was', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const before = await agentPage(context, agent.api_token);
  const reader = await madeToken(server, agent.api_token, { name: 'reader', scopes: ['read'] });
  await leaveFeedback(context, agent.api_token);

  const socket = openSocket(context, reader.api_token);
  const [received] = await changesUntil<Change>(socket, 'feedback.received');
  assert.ok(received);
  const answer = (await socket.emitWithAck('ack', { cursor: received.cursor })) as {
    cursor?: string;
  };
  assert.is(answer.cursor, received.cursor);

  // The read token's own place moved: it has nothing new.
  const readersPage = await callJson<ChangesPage>(server, 'GET', '/changes', reader.api_token);
  assert.is(readersPage.status, 200);
  assert.equal(readersPage.body.changes, []);
  assert.is(readersPage.body.cursor, received.cursor);
  // The agent's remembered place did not: the full token still reads the change.
  const agents = await agentPage(context, agent.api_token);
  assert.equal(
    agents.changes.map((change) => change.event_id),
    [received.event_id],
  );
  assert.is.not(agents.cursor, before.cursor);
});

test('a socket is disconnected at once when its token is revoked, and reconnecting is refused with the reason', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const helper = await madeToken(server, agent.api_token, { name: 'helper' });
  const kept = openSocket(context, agent.api_token);
  const socket = openSocket(context, helper.api_token);
  await Promise.all([connected(socket), connected(kept)]);
  const gone = disconnected(socket);
  const revoked = await revokeToken(server, agent.api_token, helper.token_id);
  assert.is(revoked.status, 200, JSON.stringify(revoked.body));
  assert.is(await gone, 'io server disconnect');
  // The socket of the agent's other token stays open: it still receives what comes.
  const heard = changesUntil<Change>(kept, 'feedback.received');
  await leaveFeedback(context, agent.api_token);
  await heard;
  assert.ok(kept.connected);

  const again = openSocket(context, helper.api_token);
  const refused = await refusal(again);
  assert.is(refused.code, 'unauthorized');
  assert.is(refused.reason, 'revoked');
  assert.not.match(JSON.stringify(refused), helper.api_token);
});

test('a socket is disconnected when its token is rotated out with no grace', async (context) => {
  const { server } = context;
  const agent = await server.signUp();
  const old = await madeToken(server, agent.api_token, { name: 'to rotate' });
  const socket = openSocket(context, old.api_token);
  await connected(socket);
  const gone = disconnected(socket);
  const rotated = await rotateToken(server, old.api_token, { grace_hours: 0 });
  assert.is(rotated.status, 201, JSON.stringify(rotated.body));
  assert.is(await gone, 'io server disconnect');
  const refused = await refusal(openSocket(context, old.api_token));
  assert.equal([refused.code, refused.reason], ['unauthorized', 'revoked']);
  // The new token's socket opens.
  const fresh = openSocket(context, rotated.body.api_token);
  await connected(fresh);
});

test('a socket is disconnected when its token expires, by the service clock', async (context) => {
  const { server, clock } = context;
  const agent = await server.signUp();
  const brief = await madeToken(server, agent.api_token, { name: 'brief', expires_in_hours: 1 });
  const socket = openSocket(context, brief.api_token);
  await connected(socket);
  const gone = disconnected(socket);
  clock.advance(HOUR_MS - 1);
  assert.ok(socket.connected, 'still open 1 ms before its expiry');
  clock.advance(1);
  assert.is(await gone, 'io server disconnect');
  const refused = await refusal(openSocket(context, brief.api_token));
  assert.equal([refused.code, refused.reason], ['unauthorized', 'expired']);
});

test('a rotation with a grace moves the old socket expiry to the end of the grace', async (context) => {
  const { server, clock } = context;
  const agent = await server.signUp();
  const old = await madeToken(server, agent.api_token, { name: 'graceful' });
  const socket = openSocket(context, old.api_token);
  await connected(socket);
  // The count of the clock's timers below is the watch's: the scheduled jobs (which earlier
  // tests' clock moves left catching up) first settle on theirs.
  await server.scheduler.idle();
  const timers = clock.pending;
  const gone = disconnected(socket);
  const rotated = await rotateToken(server, old.api_token, { grace_hours: 1 });
  assert.is(rotated.status, 201, JSON.stringify(rotated.body));
  // The re-check after the rotation found the token good, with an end: a timer for it.
  await turnsUntil(() => clock.pending === timers + 1);
  assert.ok(socket.connected, 'open during the grace');
  clock.advance(HOUR_MS - 1);
  const whoami = await callJson(server, 'GET', '/whoami', old.api_token);
  assert.is(whoami.status, 200, 'the old token still works 1 ms before the grace ends');
  clock.advance(1);
  assert.is(await gone, 'io server disconnect');
});

test('a socket is disconnected at once when its agent is suspended', async (context) => {
  const { server, operatorToken } = context;
  const agent = await server.signUp();
  const socket = openSocket(context, agent.api_token);
  await connected(socket);
  const gone = disconnected(socket);
  const suspended = await callJson(
    server,
    'POST',
    `/operator/agents/${agent.agent_id}/suspend`,
    operatorToken,
    { reason: 'abuse, in a test' },
  );
  assert.is(suspended.status, 200, JSON.stringify(suspended.body));
  assert.is(await gone, 'io server disconnect');
  const refused = await refusal(openSocket(context, agent.api_token));
  assert.equal([refused.code, refused.reason], ['unauthorized', 'suspended']);
});

test('a socket with an unknown token is refused with data.code unauthorized and data.reason', async (context) => {
  const refused = await refusal(openSocket(context, newToken()));
  assert.equal([refused.code, refused.reason], ['unauthorized', 'unknown']);
});

test.run();
