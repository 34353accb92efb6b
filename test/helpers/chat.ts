import type { Socket } from 'socket.io-client';
import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { KNOCK_DAYS } from '../../machines/knock.ts';
import { changesUntil, newChanges } from './changes.ts';
import { TestClock } from './clock.ts';
import { callJson as call, type JsonAnswer } from './http.ts';
import { serverSuite, type ServerSuiteContext } from './server-suite.ts';
import type { TestServer } from './server.ts';
import { problemOf, type Agent, type AgentRef } from './wire-types.ts';
import { newWorkspace } from './workspaces.ts';

/**
 * Messages and knocks through HTTP, as the chat tests call them (held to
 * protocol/documents/chat-protocol.md), with the shapes the service answers.
 */

export const HOUR_MS = 3_600_000;
/** How long a knock waits for an answer. */
export const KNOCK_LIFE_MS = KNOCK_DAYS * 24 * HOUR_MS;
/** The most bytes a message's text may hold. */
export const KIB_16 = 16 * 1024;

export interface Message {
  message_id: string;
  workspace_id: string;
  sender: AgentRef;
  text: string;
  sent_at: string;
}
export interface MessagePage {
  messages: Message[];
  next_after: string | null;
}
export interface Knock {
  knock_id: string;
  from: AgentRef;
  to: AgentRef;
  workspace_id: string | null;
  note: string;
  status: string;
  created_at: string;
  expires_at: string;
  shared_workspace_id: string | null;
  from_operator: boolean;
}
export interface KnockPage {
  knocks: Knock[];
  next_cursor: string | null;
}

export type ChatContext = ServerSuiteContext & { clock: TestClock; operatorToken: string };

/** A suite over one server on a clock the test moves (knocks expire), with an operator. */
export function chatSuite(name: string) {
  return serverSuite(name, () => {
    const clock = new TestClock();
    const operatorToken = newToken();
    return { extra: { clock, operatorToken }, config: { clock, operatorToken } };
  });
}

export const send = (server: TestServer, agent: Agent, workspaceId: string, text: string) =>
  call<Message>(server, 'POST', `/workspaces/${workspaceId}/messages`, agent.api_token, { text });

export const read = (server: TestServer, agent: Agent, workspaceId: string, query = '') =>
  call<MessagePage>(server, 'GET', `/workspaces/${workspaceId}/messages${query}`, agent.api_token);

export const knockOn = (server: TestServer, agent: Agent, workspaceId: string, note: string) =>
  call<{ knock_id: string; status: string }>(
    server,
    'POST',
    `/workspaces/${workspaceId}/knock`,
    agent.api_token,
    { note },
  );

export const knockAgent = (server: TestServer, agent: Agent, target: AgentRef, note: string) =>
  call<{ knock_id: string; status: string }>(
    server,
    'POST',
    `/agents/${target.agent_id}/knock`,
    agent.api_token,
    { note },
  );

export const answerKnock = (
  server: TestServer,
  agent: Agent,
  knockId: string,
  verb: 'accept' | 'decline' | 'withdraw',
) =>
  call<{ knock_id: string; status: string; workspace_id?: string }>(
    server,
    'POST',
    `/knocks/${knockId}/${verb}`,
    agent.api_token,
    {},
  );

export const listKnocks = (server: TestServer, agent: { api_token: string }, query = '') =>
  call<KnockPage>(server, 'GET', `/knocks${query}`, agent.api_token);

/** What whoami counts as unread. */
export async function unread(server: TestServer, agent: Agent) {
  const me = await call<{ unread: { changes: number; messages: number; knocks: number } }>(
    server,
    'GET',
    '/whoami',
    agent.api_token,
  );
  assert.is(me.status, 200);
  return me.body.unread;
}

/** An agent that owns a public workspace, and the workspace. */
export async function publicOwner(server: TestServer) {
  const owner = await server.signUp();
  const workspaceId = await newWorkspace(server, owner, 'public');
  await newChanges(server, owner);
  return { owner, workspaceId };
}

export async function memberIds(server: TestServer, agent: Agent, workspaceId: string) {
  const shown = await call<{ visibility: string; owner: AgentRef; members: AgentRef[] }>(
    server,
    'GET',
    `/workspaces/${workspaceId}`,
    agent.api_token,
  );
  assert.is(shown.status, 200);
  return shown.body.members.map((m) => m.agent_id).sort();
}

/** `409 knock_not_pending` carrying what became of the knock as `knock_status` (chat-protocol.md). */
export function assertNotPending(answer: JsonAnswer<unknown>, status: string) {
  const problem = problemOf(answer);
  assert.is(answer.status, 409, JSON.stringify(problem));
  assert.is(problem.code, 'knock_not_pending');
  assert.ok(problem.detail.includes(status), `the detail names ${status}: ${problem.detail}`);
  assert.is(problem.knock_status, status, 'the problem carries the knock status as `knock_status`');
}

/** Moves the test clock and waits for the scheduled jobs that fell due on the way. */
export async function moveClock(server: TestServer, clock: TestClock, ms: number): Promise<void> {
  // A job still running would arm its next timer after this move, and miss it.
  await server.scheduler.idle();
  clock.advance(ms);
  await server.scheduler.idle();
}

/**
 * Resolves once the socket carries live changes: the agent's own feedback, sent now, is the
 * last thing it has to hear before anything the test does next.
 */
export async function caughtUp(server: TestServer, socket: Socket, agent: Agent): Promise<void> {
  const heard = changesUntil(socket, 'feedback.received');
  const sent = await server.post(
    '/feedback',
    { message: 'ready', category: 'other' },
    agent.api_token,
  );
  assert.is(sent.status, 202);
  await heard;
}
