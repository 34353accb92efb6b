import type { Services } from '../../actors/kernel/services.ts';
import type { MailRouter } from './inbound.ts';

/** What the door does with checked mail (helper H4b fills in join and agent; H3 invite). */
export function mailRouter(services: Services, log: (message: string) => void): MailRouter {
  void services;
  void log;
  return {
    join: async () => undefined,
    agent: async () => undefined,
    invite: async () => undefined,
  };
}
