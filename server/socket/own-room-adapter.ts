import { Adapter, type Room, type SocketId } from 'socket.io-adapter';

/** What a socket with no room but its own is in: one set for all, never added to. */
const NO_ROOMS: Set<Room> = new Set();

/**
 * socket.io's in-memory adapter, less each socket's room of its own. socket.io puts every
 * socket in a room named by its id, which the adapter keeps as two one-element sets (a few
 * hundred bytes an idle socket, bench/idle-sockets.ts). The service sends to each socket itself
 * (./door.ts) and never to a room, so that room is not kept: `io.to(socket.id)` reaches no one
 * here. Sending to every socket (`io.emit`), and any other room, work as they do in socket.io.
 */
export class OwnRoomlessAdapter extends Adapter {
  override addAll(id: SocketId, rooms: Set<Room>): void {
    const others = new Set([...rooms].filter((room) => room !== id));
    if (others.size === 0) {
      if (!this.sids.has(id)) this.sids.set(id, NO_ROOMS);
      return;
    }
    if (this.sids.get(id) === NO_ROOMS) this.sids.delete(id);
    super.addAll(id, others);
  }
}
