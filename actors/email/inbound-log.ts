import {
  deleteInbound,
  insertInbound,
  setInboundOutcome,
  type InboundRow,
} from '../../storage/mail-inbound.ts';
import type { Services } from '../kernel/services.ts';

export type { InboundRow };

/**
 * The SMTP door's record of every message it took (mail_inbound), reached through the email
 * capability because the doors never import storage/. `record` answers false for a repeat (a
 * retried delivery): the door then runs nothing.
 */
export const inboundLog = {
  record: (services: Services, row: InboundRow) => insertInbound(services.db(), row),
  setOutcome: (services: Services, key: string, outcome: string) =>
    setInboundOutcome(services.db(), key, outcome),
  forget: (services: Services, key: string) => deleteInbound(services.db(), key),
};
