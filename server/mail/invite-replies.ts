import type { Services } from '../../actors/kernel/services.ts';
import type { InboundMail } from './inbound.ts';

/** A reply to an email invite: joins (helper H3 fills this in). */
export async function answerInviteReply(
  services: Services,
  mail: InboundMail,
  key: string,
): Promise<void> {
  void services;
  void mail;
  void key;
}
