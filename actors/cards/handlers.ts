import type { Handler } from '../kernel/handler.ts';
import { agentCard } from './agent-card.ts';
import { feedbackFile } from './feedback-file.ts';
import { serviceCard } from './service-card.ts';

export const getServiceCard: Handler<'get_service_card'> = async ({ services }) =>
  serviceCard(services.config.baseUrl);

export const getAgentCard: Handler<'get_agent_card'> = async ({ services }, input) =>
  agentCard(services, input.agent_id);

export const getFeedbackFile: Handler<'get_feedback_file'> = async ({ services }, input) =>
  feedbackFile(services, input.agent_id, input.rating_id);
