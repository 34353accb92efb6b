/**
 * Message fan-out: a private workspace of 10 members, all connected by socket.io among 1,000
 * connected agents; one member sends messages one at a time (`POST
 * /workspaces/<id>/messages`), each timed from the POST's send to the other 9 members'
 * `message.sent`, beside a bare socket.io room of 10 among as many sockets (bench/fan-out.ts).
 * Target: p99 under 5 ms.
 *
 * The members are agents of the crowd: the owner makes the workspace and invites the others,
 * who redeem their invites, over HTTP as any agent would.
 */
import { performance } from 'node:perf_hooks';
import {
  Arrivals,
  emptyFanOut,
  postJson,
  timeInTurns,
  warmUpLanes,
  type Crowd,
  type FanOutFigure,
  type FanOutLane,
  type Floor,
  type KeyOf,
} from './fan-out.ts';

export const CHAT_MEMBERS = 10;
export const CHAT_MESSAGES = 300;
const WARM_UP_MESSAGES = 20;
const TEXT = 'Bench: the draft is in reports/q3.md; can you check the figures before noon?';

const messageKey: KeyOf = (event) =>
  event.type === 'message.sent' ? (event.data?.message_id as string | undefined) : undefined;

/** The workspace: made by the crowd's first agent, joined by the next ones through invites. */
async function makeWorkspace(crowd: Crowd, members: number): Promise<string> {
  const { server, tokens } = crowd;
  const { workspace_id: workspaceId } = await postJson<{ workspace_id: string }>(
    server.url('/workspaces'),
    { name: 'bench chat' },
    tokens[0],
    201,
  );
  for (const token of tokens.slice(1, members)) {
    const { invite_token: inviteToken } = await postJson<{ invite_token: string }>(
      server.url(`/workspaces/${workspaceId}/invites`),
      {},
      tokens[0],
      201,
    );
    await postJson(server.url('/invites/redeem'), { invite_token: inviteToken }, token, 200);
  }
  return workspaceId;
}

/**
 * On the crowd's server: the workspace, untimed messages, then CHAT_MESSAGES, each timed until
 * every other member has it, taking turns with the floor's emits to its small room. The figures
 * are handed to `record` first and filled in as they go.
 */
export async function measureChat(
  crowd: Crowd,
  floorOf: () => Promise<Floor>,
  record: (figure: FanOutFigure) => void,
  signal: AbortSignal,
  log: (line: string) => void,
): Promise<void> {
  const members = Math.min(CHAT_MEMBERS, crowd.clients.length);
  if (members < 2) throw new Error('a workspace needs 2 connected members to fan out to');
  const workspaceId = await makeWorkspace(crowd, members);
  const [sender] = crowd.tokens;
  const send = async () =>
    (
      await postJson<{ message_id: string }>(
        crowd.server.url(`/workspaces/${workspaceId}/messages`),
        { text: TEXT },
        sender,
        201,
      )
    ).message_id;
  const floor = await floorOf();
  const receivers = crowd.clients.slice(1, members);
  const arrivals = new Arrivals(
    receivers.map((client) => client.socket),
    messageKey,
  );
  try {
    const service: FanOutFigure = {
      driver: crowd.kind,
      path: 'service',
      receivers: receivers.length,
      connected: crowd.clients.length,
      samples: emptyFanOut(),
    };
    const room: FanOutFigure = {
      driver: crowd.kind,
      path: 'bare socket.io room emit',
      receivers: floor.roomSize,
      connected: floor.sockets,
      samples: emptyFanOut(),
    };
    const lanes: FanOutLane[] = [
      { write: send, arrivals, receivers: receivers.length, samples: service.samples },
      floor.smallRoom(room.samples),
    ];
    await timeInTurns(warmUpLanes(lanes), WARM_UP_MESSAGES, signal);
    record(service);
    record(room);
    const started = performance.now();
    await timeInTurns(lanes, CHAT_MESSAGES, signal);
    log(
      `${crowd.kind}: ${service.samples.writes} messages to ${receivers.length} members, with the floor's emits, in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
  } finally {
    arrivals.detach();
  }
}
