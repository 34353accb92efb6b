import {
  deleteInbound,
  insertInbound,
  setInboundOutcome,
  type InboundRow,
} from '../../storage/email/inbound.ts';
import type { Services } from '../kernel/services.ts';

export type { InboundRow };

/**
 * How long a message may stay `dispatching` before a retried delivery takes it over: longer than
 * any command runs (a long-poll waits a minute at most), so only a process that stopped half-way
 * leaves one that old. Its command may then run once more, never more.
 */
export const STALE_DISPATCH_MS = 15 * 60_000;

/**
 * The SMTP door's record of every message it took (mail_inbound), reached through the email
 * capability because the doors never import storage/. `record` answers false for a repeat (a
 * retried delivery): the door then runs nothing.
 */
export const inboundLog = {
  record: (services: Services, row: InboundRow) =>
    insertInbound(services.db(), row, new Date(row.receivedAt.getTime() - STALE_DISPATCH_MS)),
  setOutcome: (services: Services, key: string, outcome: string) =>
    setInboundOutcome(services.db(), key, outcome),
  forget: (services: Services, key: string) => deleteInbound(services.db(), key),
};
