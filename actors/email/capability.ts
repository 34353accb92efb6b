import type { Capability } from '../kernel/capability.ts';
import { startMailSender, type MailSender } from './sender.ts';
import type { MailSettings } from './settings.ts';

declare module '../kernel/services.ts' {
  interface ServiceConfig {
    /** The email settings of the start-up contract (server/config.ts, mailSettings). */
    mail?: MailSettings;
  }
  interface Services {
    /** This process's outbox loop; null before start-up and without mail settings. */
    readonly mailSender: MailSender | null;
  }
}

/**
 * Email: the outbox every message leaves from, notification digests to a person, invites by
 * email, and the state of agents that live by email (their private addresses, sign-ups,
 * confirmations of binding commands). The SMTP door itself is server/mail/.
 */
export const email = {
  name: 'email',
  handlers: {},
  jobs: [],
  async startUp(services, log) {
    services.provide('mailSender', services.config.mail ? startMailSender(services, log) : null);
  },
  async shutDown(services) {
    await services.mailSender?.stop();
  },
} satisfies Capability;
