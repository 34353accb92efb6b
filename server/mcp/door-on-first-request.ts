import type { createMcpDoor } from './door.ts';

type McpDoor = ReturnType<typeof createMcpDoor>;

/**
 * The MCP door, loaded by the first request to /mcp rather than at start: door.ts brings the
 * MCP SDK, ~25 MB of RSS that a service nobody calls over MCP never needs. Every request,
 * the first included, is answered by the same door createMcpDoor makes; the first one waits
 * for the load (tens of milliseconds).
 */
export function mcpDoorOnFirstRequest(...args: Parameters<typeof createMcpDoor>): McpDoor {
  let door: Promise<McpDoor> | undefined;
  return async (request, countMessage) => {
    door ??= import('./door.ts').then(({ createMcpDoor }) => createMcpDoor(...args));
    return (await door)(request, countMessage);
  };
}
