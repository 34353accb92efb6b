import { mailReachability } from '../../protocol/documents.ts';
import type { Capability } from '../kernel/capability.ts';
import type { ConfirmedRunner } from './confirmations.ts';
import {
  confirm_mail_command,
  mail_confirmation_page,
  set_mail_push,
} from './mailgate-handlers.ts';
import { digestJob } from './notifications/digest.ts';
import * as notifications from './notifications/handlers.ts';
import { MailPush } from './push.ts';
import { startMailSender, type MailSender } from './sender.ts';
import type { MailSettings } from './settings.ts';
import { emailSettings } from './settings.ts';

declare module '../kernel/services.ts' {
  interface ServiceConfig {
    /** The email settings, from the environment (./settings.ts, emailSettings). */
    mail?: MailSettings;
    /** The sign-up address by email, which the documents name (mail.joinAddress). */
    mailJoinAddress?: string;
  }
  interface Services {
    /** This process's outbox loop; null before start-up and without mail settings. */
    readonly mailSender: MailSender | null;
    /**
     * How a confirmed command runs: the mail door's runner (server/email/mailgate.ts), which
     * goes through the doors' one `run()`; the server provides it at start-up, SMTP door or not.
     */
    readonly confirmedRunner: ConfirmedRunner;
  }
}

/**
 * Email: the outbox every message leaves from, notification digests to a person, invites by
 * email, and the state of agents that live by email (their private addresses, sign-ups,
 * confirmations of binding commands). The SMTP door itself is server/email/.
 */
export const email = {
  name: 'email',
  settings: emailSettings,
  handlers: {
    set_mail_push,
    confirm_mail_command,
    mail_confirmation_page,
    set_notification_email: notifications.setNotificationEmail,
    confirm_notification_email: notifications.confirmNotificationEmail,
    confirm_notification_email_link: notifications.confirmNotificationEmailLink,
    get_notification_email: notifications.getNotificationEmail,
    notification_unsubscribe_page: notifications.notificationUnsubscribePage,
    unsubscribe_notification_email: notifications.unsubscribeNotificationEmail,
  },
  jobs: [digestJob],
  // The sign-up address by email, where the settings have one (./settings.ts).
  documentValues: ({ config }): Record<string, string> =>
    config.mailJoinAddress === undefined
      ? {}
      : {
          mail_join_address: config.mailJoinAddress,
          mail_reachability: mailReachability(config.mailJoinAddress),
        },
  async startUp(services, log) {
    services.provide(
      'mailSender',
      services.config.mail ? await startMailSender(services, log) : null,
    );
    services.provide('mailPush', services.config.mail ? new MailPush(services, log) : null);
    await services.mailPush?.start();
  },
  async shutDown(services) {
    await services.mailPush?.stop();
    await services.mailSender?.stop();
  },
} satisfies Capability;
