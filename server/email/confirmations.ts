import {
  carryOut,
  confirmationLink,
  confirmationOf,
  holdBindingCommand,
  renewConfirmationLink,
  type ConfirmedRunner,
} from '../../actors/email/confirmations.ts';
import type { Services } from '../../actors/kernel/services.ts';
import { asYaml } from './answers.ts';
import type { InboundMail } from './inbound.ts';

/** The Message-ID local part of a confirmation request: replies name it in In-Reply-To. */
const REQUEST_PREFIX = 'confirm-';

/** The confirmation a reply answers (by In-Reply-To, then References), if it answers one. */
export function confirmationRepliedTo(services: Services, mail: InboundMail): string | null {
  const domain = services.config.mail!.domain;
  const pattern = new RegExp(
    `^<${REQUEST_PREFIX}([0-9a-f-]{36})@${domain.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}>$`,
    'i',
  );
  for (const id of [mail.inReplyTo, ...[...mail.references].reverse()]) {
    const found = id === null ? null : pattern.exec(id.trim());
    if (found) return found[1]!.toLowerCase();
  }
  return null;
}

/**
 * A command held for its confirmation (a binding one, or one that changes something sent in
 * mail that is not aligned): the request the answer carries.
 */
export async function requestConfirmation(
  services: Services,
  agentId: string,
  operation: string,
  input: Record<string, unknown>,
  why: 'binding' | 'unaligned',
): Promise<{ idKey: string; text: string }> {
  const held = await holdBindingCommand(services, agentId, operation, input);
  return {
    idKey: `${REQUEST_PREFIX}${held.confirmationId}`,
    text: [
      why === 'binding'
        ? `${operation} is a binding command: nothing has happened yet.`
        : `${operation} changes something, and this message did not pass DMARC alignment for your address (SPF or DKIM of your domain): anyone can write your address in a From, so it did not run. Nothing has happened yet.`,
      'To carry it out, reply to this email (from the address you signed up from; the reply must',
      'pass DMARC for it), or POST to this link within 24 hours:',
      confirmationLink(services, held.token),
      '',
      'The command, as you sent it:',
      asYaml({ command: operation, input }),
    ].join('\n'),
  };
}

/**
 * A reply to a confirmation request: an aligned one (DMARC pass for the sign-up address) carries
 * the command out once; any other gets a fresh link and nothing happens.
 */
export async function answerConfirmationReply(
  services: Services,
  mail: InboundMail,
  agentId: string,
  confirmationId: string,
  runner: ConfirmedRunner,
): Promise<string> {
  const confirmation = await confirmationOf(services, confirmationId);
  if (!confirmation || confirmation.agentId !== agentId) {
    return asYaml({
      confirmed: false,
      detail: 'No held command of yours waits for this reply.',
    });
  }
  if (!mail.auth.aligned && confirmation.status === 'pending') {
    const token = await renewConfirmationLink(services, confirmationId);
    return [
      `${confirmation.operation} was NOT carried out: this reply did not pass DMARC alignment for`,
      'your address (SPF or DKIM of your domain), so it cannot confirm a held command.',
      'To carry it out, POST to this link within 24 hours (the earlier link no longer works):',
      confirmationLink(services, token),
      '',
      asYaml({ sender_auth: mail.auth }),
    ].join('\n');
  }
  try {
    const outcome = await carryOut(services, confirmation, runner);
    return asYaml(outcome);
  } catch (error) {
    return asYaml({ confirmed: false, detail: String((error as Error).message) });
  }
}
