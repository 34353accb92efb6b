import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Socket } from 'socket.io-client';
import { suite, type Test } from 'uvu';
import type { Config } from '../../server/config.ts';
import { connectMcp, connectSocket } from './clients.ts';
import { startTestServer, type TestServer } from './server.ts';

/** What a suite over one test server holds. */
export interface ServerSuiteContext {
  server: TestServer;
  /** MCP clients the running test opened (mcpClient); closed after it. */
  clients: Client[];
  /** Sockets the running test opened (openSocket); disconnected after it. */
  sockets: Socket[];
}

/**
 * A uvu suite over one test server, started before its first test and closed after its last;
 * the MCP clients and sockets a test opens are closed after that test. `prepare` gives the
 * server's configuration and what else the tests find in their context (a test clock, an
 * operator token).
 */
export function serverSuite<Extra extends object = Record<never, never>>(
  name: string,
  prepare: () => { extra?: Extra; config?: Partial<Config> } = () => ({}),
): Test<ServerSuiteContext & Extra> {
  const test = suite<ServerSuiteContext & Extra>(name);
  test.before(async (context) => {
    const { extra, config } = prepare();
    Object.assign(context, extra);
    context.server = await startTestServer(config);
    context.clients = [];
    context.sockets = [];
  });
  test.after.each(async ({ sockets, clients }) => {
    for (const socket of sockets.splice(0)) socket.disconnect();
    for (const client of clients.splice(0)) await client.close();
  });
  test.after(async ({ server }) => {
    await server.close();
  });
  return test;
}

/** An MCP client as `token`, closed after the test. */
export async function mcpClient(
  context: ServerSuiteContext,
  token: string,
  name = 'test-agent',
): Promise<Client> {
  const client = await connectMcp(context.server, token, name);
  context.clients.push(client);
  return client;
}

/** A socket.io connection as `token` (from `cursor` when given), disconnected after the test. */
export function openSocket(context: ServerSuiteContext, token: string, cursor?: string): Socket {
  const socket = connectSocket(context.server, token, cursor);
  context.sockets.push(socket);
  return socket;
}
