import type { Services } from '../kernel/services.ts';

/** This process's loop that hands queued mail to SMTP_URL (or logs it when there is none). */
export interface MailSender {
  /** Something was queued: look now rather than at the next poll. */
  kick(): void;
  /** Resolves once nothing due is left unsent (tests, shutdown). */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts the loop (helper H1 fills this in). */
export function startMailSender(services: Services, log: (message: string) => void): MailSender {
  void services;
  void log;
  return { kick: () => undefined, idle: async () => undefined, stop: async () => undefined };
}
