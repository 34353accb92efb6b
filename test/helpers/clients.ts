import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Socket } from 'socket.io-client';
import type { TestServer } from './server.ts';

/** An MCP SDK client connected to the server's /mcp with `token` as Bearer; close it after. */
export async function connectMcp(server: TestServer, token: string, name: string): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(server.url('/mcp')), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

/** The change events the socket receives from now until the first of type `last`, included. */
export function changesUntil<T extends { type: string }>(
  socket: Socket,
  last: string,
): Promise<T[]> {
  return new Promise((resolve) => {
    const seen: T[] = [];
    const listener = (event: T) => {
      seen.push(event);
      if (event.type === last) {
        socket.off('change', listener);
        resolve(seen);
      }
    };
    socket.on('change', listener);
  });
}
