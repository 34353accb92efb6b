import type { Services } from '../../actors/kernel/services.ts';
import type { MailRouter } from './inbound.ts';

/** The running SMTP door. */
export interface MailDoor {
  readonly port: number;
  close(): Promise<void>;
}

/** Starts the SMTP door (helper H4a fills this in). */
export async function startMailDoor(
  services: Services,
  options: { host: string; port: number; router: MailRouter; log: (message: string) => void },
): Promise<MailDoor> {
  void services;
  void options;
  return { port: 0, close: async () => undefined };
}
