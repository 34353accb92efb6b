import type { Server, Socket } from 'socket.io';
import type { FeedSignal } from '../../actors/kernel/change-hub.ts';
import type { Services } from '../../actors/kernel/services.ts';
import type { TokenWatch } from '../../actors/kernel/token-resolver.ts';
import type { TokenGrant } from '../../actors/kernel/token-scope.ts';
import { ServiceError, toProblem, type Problem } from '../../protocol/errors.ts';
import { encodeCursor } from '../../protocol/events.ts';
import { cursorSeq } from '../../actors/feed/cursor.ts';
import { markRead, placeOf, visibleChangesAfter } from '../../actors/feed/feed.ts';
import { asServiceError } from '../http/problem.ts';
import { callerForToken } from '../invoke.ts';
import { HandshakeTurns } from './handshake-turns.ts';
import {
  signatureClaims,
  signatureFault,
  SOCKET_CHALLENGE_HEADER,
  SOCKET_PATH,
} from '../../protocol/message-signature.ts';

const REPLAY_PAGE = 500;

/**
 * A `change` event as socket.io's own parser encodes it (an EVENT packet on the main namespace,
 * no ack id), around the event's JSON made once when it was recorded. A fan-out to 1,000
 * watchers then serialises each event once, not once more per socket with socket.io's
 * JSON.stringify and its scan for binary data.
 */
const encodedChange = (json: string) => `2["change",${json}]`;

/** socket.io's packet writer, as its adapters use it to send packets encoded beforehand. */
interface PacketWriter {
  packet?: (packets: string[], options: { preEncoded: true }) => void;
}

/** Sends one recorded change: pre-encoded when its JSON is at hand, else through `emit`. */
function sendChange(socket: Socket, change: FeedSignal): void {
  const writer = socket as unknown as PacketWriter;
  if (change.json !== undefined && typeof writer.packet === 'function') {
    writer.packet([encodedChange(change.json)], { preEncoded: true });
  } else socket.emit('change', change.event);
}

/**
 * Each replayed row's packet, made once: sockets that replay the same rows (one shared read,
 * actors/feed/feed.ts) send the same text, not a serialisation each.
 */
type ReplayedRow = Awaited<ReturnType<typeof visibleChangesAfter>>['rows'][number];
const replayPackets = new WeakMap<ReplayedRow, string>();

/** Sends one replayed change, pre-encoded once for every socket that replays it. */
function sendReplayed(socket: Socket, row: ReplayedRow): void {
  const writer = socket as unknown as PacketWriter;
  if (typeof writer.packet !== 'function') {
    socket.emit('change', row.event);
    return;
  }
  let packet = replayPackets.get(row);
  if (packet === undefined) {
    packet = encodedChange(row.json ?? JSON.stringify(row.event));
    replayPackets.set(row, packet);
  }
  writer.packet([packet], { preEncoded: true });
}

/** A refused connection: the client's `connect_error` carries the problem as `data`. */
export function socketRefusal(error: ServiceError, baseUrl: string): Error & { data: Problem } {
  const problem = toProblem(error, baseUrl);
  return Object.assign(new Error(problem.detail), { data: problem });
}

/**
 * A token sent in a form the token resolver never sees (not a string: it is passed on as no
 * token) is malformed: its refusal says so, as the resolver's own refusals of malformed and
 * foreign tokens do.
 */
function withReason(error: ServiceError, token: unknown): ServiceError {
  const sent = token !== undefined && token !== null && token !== '';
  if (!sent || error.code !== 'unauthorized' || error.extra.reason !== undefined) return error;
  return new ServiceError(error.code, error.message, { ...error.extra, reason: 'malformed' });
}

interface SocketData {
  agentId: string;
  grant: TokenGrant;
  from: number;
  /** The key whose signature the handshake carried; null: an unsigned connection. */
  signedBy: string | null;
}

/** What a client sends as socket.io's `auth`. */
interface SocketAuth {
  token?: unknown;
  cursor?: unknown;
  /** RFC 9421 `Signature-Input` and `Signature` values over the connection's challenge. */
  signature_input?: unknown;
  signature?: unknown;
}

/**
 * engine.io's session id of the connection: what the client sees as `socket.io.engine.id`.
 * engine.io declares it private in its types, though it is the id of its public handshake.
 */
function engineSessionId(socket: Socket): string {
  return (socket.conn as unknown as { id: string }).id;
}

/** What a handshake's signature covers: the challenge binds it to this one connection. */
const HANDSHAKE_COMPONENTS = ['@method', '@authority', '@path', SOCKET_CHALLENGE_HEADER];

/**
 * Verifies a handshake's signature, if it carries one: RFC 9421 over `GET <base>/socket.io/`
 * with the header `socket-challenge` set to the connection's challenge (engine.io's session id,
 * made by the server for this connection: `socket.io.engine.id` in socket.io-client). The key
 * must be the token's agent's. Answers the key's id, or null for an unsigned connection.
 */
async function verifySignedHandshake(
  services: Services,
  socket: Socket,
  auth: SocketAuth,
  agentId: string,
): Promise<string | null> {
  if (auth.signature_input === undefined && auth.signature === undefined) return null;
  if (typeof auth.signature_input !== 'string' || typeof auth.signature !== 'string') {
    throw signatureFault(
      'malformed',
      '`auth.signature_input` and `auth.signature` are the two header values of an RFC 9421 signature, as strings.',
    );
  }
  const claims = signatureClaims(
    {
      method: 'GET',
      authority: socket.handshake.headers.host ?? '',
      path: SOCKET_PATH,
      query: '',
      headers: {
        'signature-input': auth.signature_input,
        signature: auth.signature,
        [SOCKET_CHALLENGE_HEADER]: engineSessionId(socket),
      },
    },
    () => new URL(services.config.baseUrl).protocol.slice(0, -1),
  );
  const unknown: string[] = [];
  const proof = await services.signatures.verify(claims ?? [], HANDSHAKE_COMPONENTS, unknown);
  if (proof === null) {
    throw signatureFault(
      'malformed',
      `The handshake's signature names no key added here (keyid ${unknown.map((id) => `"${id}"`).join(', ') || 'missing'}).`,
    );
  }
  if (proof.agentId !== agentId) {
    throw signatureFault(
      'agent_mismatch',
      'The handshake is signed by a key of another agent than the token\u2019s.',
    );
  }
  return proof.keyId;
}

/**
 * The changes feed over socket.io: authenticate with `auth: {token, cursor?}`, receive every
 * event after the cursor (or after the remembered place), then new ones live, as `change`
 * events, in order, each once. `ack` with a cursor moves the remembered place. A restricted
 * token (actors/kernel/token-scope.ts) replays from and acks its own place, and a workspace
 * token receives only that workspace's changes. A socket whose token stops working (revoked,
 * rotated out, expired, its agent suspended) is disconnected at once.
 */
export function attachSocketDoor(
  io: Server,
  services: Services,
  options: { baseUrl: string; socketsPerAgent: number; log: (error: unknown) => void },
): void {
  const { baseUrl, log } = options;
  const open = new Map<string, number>();
  // A crowd of handshakes takes turns with every other request (./handshake-turns.ts).
  const turns = new HandshakeTurns();
  /** The token, the signature, the room for one more socket, and the place to start from. */
  const admit = async (socket: Socket, auth: SocketAuth): Promise<void> => {
    const { agent, principal } = await callerForToken(
      services,
      typeof auth.token === 'string' ? auth.token : undefined,
    );
    const { agentId } = agent;
    const signedBy = await verifySignedHandshake(services, socket, auth, agentId);
    const grant = principal.token as TokenGrant;
    if ((open.get(agentId) ?? 0) >= options.socketsPerAgent) {
      throw new ServiceError(
        'too_many_connections',
        `You already hold ${options.socketsPerAgent} socket.io connections, the most one agent may. Close one first; one connection receives all your changes.`,
      );
    }
    const from =
      auth.cursor === undefined || auth.cursor === null
        ? await placeOf(services, grant, agent.readSeq)
        : await cursorSeq(services, agentId, auth.cursor);
    socket.data = { agentId, grant, from, signedBy } satisfies SocketData;
  };
  io.use((socket, next) => {
    // Waiting for its turn, a handshake is one small closure: a crowd waits long enough for what
    // waits to outlive the young generation, and an async function's frame and promises were
    // most of what 10,000 handshakes left behind in the old one (bench/idle-sockets.ts).
    turns.take(() => {
      const auth = (socket.handshake.auth ?? {}) as SocketAuth;
      admit(socket, auth).then(
        () => next(),
        (error: unknown) =>
          next(socketRefusal(withReason(asServiceError(error, log), auth.token), baseUrl)),
      );
    });
  });

  const door: Door = { services, baseUrl, log, open };
  io.on('connection', (socket: Socket) => {
    const feed = new SocketFeed(door, socket, socket.data as SocketData);
    socket.data = feed;
    socket.on('disconnect', closeFeed);
    socket.on('ack', ackOnFeed);
    void feed.pump();
  });
}

/** What every socket's feed shares: the door's services and its count of each agent's sockets. */
interface Door {
  services: Services;
  baseUrl: string;
  log: (error: unknown) => void;
  /** How many sockets each agent holds open here. */
  open: Map<string, number>;
}

/** socket.io calls a socket's listeners with the socket as `this`: one function for all. */
function closeFeed(this: Socket): void {
  (this.data as SocketFeed).close();
}

function ackOnFeed(this: Socket, payload: unknown, callback?: unknown): void {
  (this.data as SocketFeed).ack(payload, callback);
}

/**
 * One socket's feed: the last change sent, the reads that catch up, the token that keeps it
 * open. One object per socket, its methods shared, and one context for the two callbacks it
 * hands out: an idle socket's cost here is a few hundred bytes (bench/idle-sockets.ts).
 */
class SocketFeed {
  private sent: number;
  private pumping = false;
  private again = false;
  private closed = false;
  private readonly watch: TokenWatch;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly door: Door,
    private readonly socket: Socket,
    private readonly data: SocketData,
  ) {
    const { services, open } = door;
    const { agentId, grant } = data;
    this.sent = data.from;
    open.set(agentId, (open.get(agentId) ?? 0) + 1);
    // The token's end (revoked, rotated out, expired, its agent suspended) disconnects the
    // socket; it hears nothing of why (a reconnect's refusal says it, `data.reason`).
    this.watch = services.tokens.watch(grant, () => this.socket.disconnect(true));
    this.unsubscribe = services.hub.subscribe(agentId, (change) => this.signal(change));
  }

  /**
   * A change committed for the agent: sent at once when it follows directly on the last one
   * sent and no read is under way; anything else (a gap, or a change during a read) sends the
   * socket back to the table, the source of truth.
   */
  private signal(change: FeedSignal): void {
    if (change.workspaceId !== undefined && !this.pumping && change.seq === this.sent + 1) {
      this.sent = change.seq;
      // A workspace token's socket passes over the other workspaces' changes.
      const workspaceId = this.data.grant.workspaceId;
      if (workspaceId === null || change.workspaceId === workspaceId) {
        sendChange(this.socket, change);
      }
    } else if (change.seq > this.sent) {
      void this.pump();
    }
  }

  /** Reads from the table whatever comes after the last change sent, and sends it. */
  async pump(): Promise<void> {
    if (this.pumping) {
      this.again = true;
      return;
    }
    const { services, log } = this.door;
    const { agentId, grant } = this.data;
    this.pumping = true;
    try {
      do {
        this.again = false;
        for (;;) {
          // Nothing past the feed's newest change known here (this process's commits, and
          // other processes' by NOTIFY; unknown once word may have been lost): nothing to
          // read. A storm of reconnecting sockets then costs the database nothing.
          const head = services.hub.head(agentId);
          if (head !== undefined && head <= this.sent) break;
          const { rows, readTo } = await visibleChangesAfter(
            services,
            agentId,
            grant,
            this.sent,
            REPLAY_PAGE,
          );
          if (this.closed) return;
          for (const row of rows) sendReplayed(this.socket, row);
          this.sent = Math.max(this.sent, readTo);
          if (rows.length < REPLAY_PAGE) break;
        }
      } while (this.again);
    } catch (error) {
      log(error);
      this.socket.disconnect(true);
    } finally {
      this.pumping = false;
    }
  }

  close(): void {
    this.closed = true;
    this.unsubscribe();
    this.watch.stop();
    const { open } = this.door;
    const { agentId } = this.data;
    const left = (open.get(agentId) ?? 1) - 1;
    if (left > 0) open.set(agentId, left);
    else open.delete(agentId);
  }

  /** `ack` with a cursor: moves the remembered place, and answers the new cursor. */
  ack(payload: unknown, callback?: unknown): void {
    const { services, baseUrl, log } = this.door;
    const { agentId, grant, signedBy } = this.data;
    const reply =
      typeof callback === 'function' ? (callback as (answer: unknown) => void) : () => undefined;
    (async () => {
      // An unsigned connection of an agent that requires signatures reads only; a signed one
      // acks while the key that signed its handshake stays live.
      if (signedBy !== null) await services.signatures.assertLive(signedBy);
      else if ((await services.agents.get(agentId))?.requireSignature) {
        throw new ServiceError(
          'signature_required',
          'You require signed requests (set_signature_policy), and this connection\u2019s handshake was not signed: it receives your changes, but `ack` (which moves your place) needs a connection whose `auth` carries `signature_input` and `signature`, an RFC 9421 signature over its challenge (/protocol#signed-requests).',
          { sign: HANDSHAKE_COMPONENTS },
        );
      }
      const cursor = (payload as { cursor?: unknown } | null)?.cursor;
      const seq = await cursorSeq(services, agentId, cursor);
      return { cursor: encodeCursor(await markRead(services, agentId, grant, seq)) };
    })().then(reply, (error: unknown) =>
      reply({ error: toProblem(asServiceError(error, log), baseUrl) }),
    );
  }
}
