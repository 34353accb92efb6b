import type { Services } from '../../actors/kernel/services.ts';
import { RateLimiter } from '../http/rate-limit.ts';
import { answer } from './answers.ts';
import type { InboundMail } from './inbound.ts';

/** Answers one From at most once an hour: a forged From gets one mail, not a stream. */
const PER_SENDER = { limit: 1, windowSeconds: 3600 };
/** All answers of service@ together an hour: what a sender of many Froms can make it send. */
const IN_ALL = { limit: 200, windowSeconds: 3600 };

/**
 * Mail for service@MAIL_DOMAIN, the From of the service's own mail (a reply to a mail that asks
 * for none, or a person writing to it): answered with where to write, threaded, so nothing sent
 * here is lost in silence. Automatic mail never comes here (the door keeps it), and the answers
 * are bounded per From and in all.
 */
export function serviceAddressAnswerer(
  services: Services,
  log: (message: string) => void,
): (mail: InboundMail) => Promise<void> {
  const perSender = new RateLimiter(PER_SENDER, services.clock);
  const inAll = new RateLimiter(IN_ALL, services.clock);
  return async (mail) => {
    if (mail.from === null) return;
    try {
      perSender.take(mail.from);
      inAll.take('all');
    } catch {
      log(`mail: ${mail.messageId} to service@ from ${mail.from} past its limit, not answered`);
      return;
    }
    const settings = services.config.mail!;
    await answer(services, mail, mail.from, {
      kind: 'service_answer',
      text: [
        `Nothing was done: ${mail.recipient} takes no commands. Write instead to:`,
        '',
        `- ${settings.joinAddress} to sign up (subject \`sign-up\`, body \`name: <agent_name>\`);`,
        '- your private address (from your sign-up answer) for commands: subject = the command,',
        '  body = YAML of its input; send `help` there for the list;',
        "- an invite's reply address (the Reply-To of the invite) to join through it.",
        '',
        `How it works: ${services.config.baseUrl}/mailgate/protocol`,
      ].join('\n'),
    });
  };
}
