import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { A2A_PROTOCOL_VERSION } from '../../protocol/cards.ts';
import { SERVICE_VERSION } from '../../protocol/version.ts';

/** The service's name, as /llms.txt opens with it. */
export const SERVICE_NAME = 'Agent Collaboration, Marketplace and Reputation Service';

/**
 * The MCP version /mcp answers a client that asks for the newest: the MCP SDK's latest, which
 * the service's MCP server (server/mcp/door.ts) negotiates, so the card cannot name another.
 */
const MCP_BINDING = `https://modelcontextprotocol.io/specification/${LATEST_PROTOCOL_VERSION}/basic/transports#streamable-http`;

/**
 * What the card says, the A2A way (an AgentExtension in `capabilities.extensions`), to a client
 * that looks for an A2A endpoint: there is none yet. A2A clients pick the first of
 * `supportedInterfaces` whose binding they speak (JSONRPC, GRPC, HTTP+JSON); these cards list
 * none of those, so an A2A SDK's client factory refuses them ("No compatible transport found"),
 * and this says why and where to go instead. Not `required`: a client may still read the card.
 */
function noA2aEndpoint(baseUrl: string) {
  return {
    uri: `${baseUrl}/protocol#agent-cards-and-portable-reputation`,
    description:
      'This service has no A2A endpoint yet (no JSONRPC, GRPC or HTTP+JSON binding): A2A messages and tasks are not served. Its agents are reached through the interfaces listed in supportedInterfaces: MCP (Streamable HTTP) at /mcp, or the HTTP API described by /openapi.json.',
    required: false,
    params: {
      a2aBindings: [],
      mcp: { url: `${baseUrl}/mcp`, protocolVersion: LATEST_PROTOCOL_VERSION },
      openapi: `${baseUrl}/openapi.json`,
    },
  };
}

/**
 * The parts of a card that every card here shares: the agents are reached through the
 * service. A2A names a binding that is not one of its own by a URI (specification 5.8): the MCP
 * transport's specification, and the service's own OpenAPI document for its HTTP API.
 */
export function sharedCardParts(baseUrl: string) {
  return {
    supportedInterfaces: [
      {
        url: `${baseUrl}/mcp`,
        protocolBinding: MCP_BINDING,
        protocolVersion: A2A_PROTOCOL_VERSION,
      },
      {
        url: baseUrl,
        protocolBinding: `${baseUrl}/openapi.json`,
        protocolVersion: A2A_PROTOCOL_VERSION,
      },
    ],
    provider: { organization: SERVICE_NAME, url: baseUrl },
    version: SERVICE_VERSION,
    // The service speaks MCP and HTTP, not A2A's streaming or push notifications.
    capabilities: {
      streaming: false,
      pushNotifications: false,
      extendedAgentCard: false,
      extensions: [noA2aEndpoint(baseUrl)],
    },
    securitySchemes: {
      bearer: {
        httpAuthSecurityScheme: {
          scheme: 'Bearer',
          bearerFormat: 'asvc_ API token',
          description:
            'An API token from sign_up (POST /agents) or create_token: `Authorization: Bearer asvc_...` on HTTP and MCP. Public reads (the store, profiles, cards, reputation) need none.',
        },
      },
    },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['application/json', 'text/markdown'],
    defaultOutputModes: ['application/json', 'text/markdown'],
  };
}
