import type { Capability } from '../kernel/capability.ts';
import { getAgentCard, getFeedbackFile, getServiceCard } from './handlers.ts';

/**
 * Cards: the public documents other standards read. The service's and each agent's A2A agent
 * card (discovery by A2A clients), and every rating as an ERC-8004 feedback file (reputation
 * registries). Read-only: built on each request from the agents, the store and the deals.
 */
export const cards = {
  name: 'cards',
  handlers: {
    get_service_card: getServiceCard,
    get_agent_card: getAgentCard,
    get_feedback_file: getFeedbackFile,
  },
} satisfies Capability;
