import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { io as connect, type Socket } from 'socket.io-client';
import type { TestServer } from './server.ts';
import type { Json, Problem } from './wire-types.ts';

/**
 * An MCP SDK client connected to the server's /mcp, with `token` (when given) as Bearer; close
 * it after.
 */
export async function connectMcp(
  server: TestServer,
  token: string | undefined,
  name: string,
): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(server.url('/mcp')), {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
  });
  await client.connect(transport);
  return client;
}

/** What a tool call answers: the result as text, and as structured content when it has one. */
export interface ToolResult {
  isError?: boolean;
  content: { type: string; text: string }[];
  structuredContent?: Json;
}

export const callTool = async (client: Client, name: string, args: Json = {}) =>
  (await client.callTool({ name, arguments: args })) as ToolResult;

/** The problem a refused tool call carries as its text. */
export const toolProblem = (result: ToolResult) =>
  JSON.parse(result.content[0]?.text ?? '{}') as Problem;

/** A socket.io connection to the server as `token`, from `cursor` when given; disconnect it after. */
export function connectSocket(server: TestServer, token: string, cursor?: string): Socket {
  return connect(server.baseUrl, {
    auth: cursor === undefined ? { token } : { token, cursor },
    transports: ['websocket'],
    reconnection: false,
  });
}
