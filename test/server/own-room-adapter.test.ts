import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server, type Socket as ServerSocket } from 'socket.io';
import { io as connect, type Socket } from 'socket.io-client';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { OwnRoomlessAdapter } from '../../server/socket/own-room-adapter.ts';

interface Context {
  io: Server;
  url: string;
  clients: Socket[];
}

/** socket.io on a real port with the service's adapter, and two clients connected to it. */
const test = suite<Context>('the adapter that keeps no room of a socket of its own');

test.before.each(async (context) => {
  const http = createServer();
  context.io = new Server(http, { adapter: OwnRoomlessAdapter });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  context.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  context.clients = [];
  for (let i = 0; i < 2; i++) {
    const client = connect(context.url, { transports: ['websocket'], forceNew: true });
    context.clients.push(client);
    await new Promise<void>((resolve) => client.once('connect', () => resolve()));
  }
});
test.after.each(async ({ io, clients }) => {
  for (const client of clients) client.disconnect();
  await io.close();
});

const adapterOf = (io: Server) => io.of('/').adapter;
const received = (client: Socket, event: string) =>
  new Promise<unknown>((resolve) => client.once(event, resolve));

test('connected sockets are in no room, yet each is known to the adapter', ({ io }) => {
  assert.is(adapterOf(io).rooms.size, 0);
  assert.is(adapterOf(io).sids.size, 2);
  for (const socket of io.of('/').sockets.values()) assert.is(socket.rooms.size, 0);
});

test('an emit to every socket reaches each', async ({ io, clients }) => {
  const both = clients.map((client) => received(client, 'hello'));
  io.emit('hello', 'all');
  assert.equal(await Promise.all(both), ['all', 'all']);
});

test('a room joined works as in socket.io, and leaving it leaves no trace', async ({
  io,
  clients,
}) => {
  const [first, second] = [...io.of('/').sockets.values()] as [ServerSocket, ServerSocket];
  first.join('lobby');
  assert.equal([...first.rooms], ['lobby']);
  assert.is(second.rooms.size, 0, 'the other socket is in no room');
  const firstClient = clients.find((client) => client.id === first.id) as Socket;
  const heard = received(firstClient, 'news');
  io.to('lobby').emit('news', 'for the lobby');
  assert.is(await heard, 'for the lobby');
  first.leave('lobby');
  assert.is(adapterOf(io).rooms.size, 0);
  assert.is(first.rooms.size, 0);
  first.join('again');
  assert.equal([...first.rooms], ['again']);
});

test('a socket that disconnects is forgotten', async ({ io, clients }) => {
  const [server] = [...io.of('/').sockets.values()] as [ServerSocket];
  const gone = once(server, 'disconnect');
  clients.find((client) => client.id === server.id)?.disconnect();
  await gone;
  assert.is(adapterOf(io).sids.size, 1);
  assert.is(adapterOf(io).rooms.size, 0);
});

test.run();
