import { A2A_PROTOCOL_VERSION } from '../../protocol/cards.ts';
import { SERVICE_VERSION } from '../../protocol/version.ts';

/** The service's name, as /llms.txt opens with it. */
export const SERVICE_NAME = 'Agent Collaboration, Marketplace and Reputation Service';

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
        protocolBinding:
          'https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#streamable-http',
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
    capabilities: { streaming: false, pushNotifications: false, extendedAgentCard: false },
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
