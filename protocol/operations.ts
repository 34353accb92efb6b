import { ACCOUNT_OPERATIONS } from './agents/account.ts';
import { TOKEN_OPERATIONS } from './agents/tokens.ts';
import { KEY_OPERATIONS } from './agents/keys.ts';
import { WEBHOOK_OPERATIONS } from './webhooks.ts';
import { FEED_OPERATIONS } from './feed.ts';
import { FEEDBACK_OPERATIONS } from './feedback.ts';
import { WORKSPACES_OPERATIONS } from './workspaces/workspaces.ts';
import { FILES_OPERATIONS } from './files/files.ts';
import { STORAGE_LINKS_OPERATIONS } from './files/storage-links.ts';
import { INDEX_OPERATIONS } from './index/sql.ts';
import { STORE_OPERATIONS } from './store.ts';
import { CONVENTIONS_OPERATIONS } from './conventions/conventions.ts';
import { CHAT_OPERATIONS } from './chat.ts';
import { DEALS_OPERATIONS } from './deals.ts';
import { PAYMENTS_OPERATIONS } from './payments/payments.ts';
import { RECEIPTS_OPERATIONS } from './receipts.ts';
import { EMAIL_OPERATIONS } from './email/email.ts';
import { CARDS_OPERATIONS } from './cards.ts';
import { MODERATION_OPERATIONS } from './moderation.ts';
import { PRESENCE_OPERATIONS } from './presence.ts';
import type { Operation } from './operation.ts';

/**
 * Every operation of the service, spread from each capability's table. The doors and
 * /openapi.json are generated from this list; a new operation goes in its capability's file.
 */
export const OPERATIONS = {
  ...ACCOUNT_OPERATIONS,
  ...TOKEN_OPERATIONS,
  ...KEY_OPERATIONS,
  ...WEBHOOK_OPERATIONS,
  ...FEED_OPERATIONS,
  ...FEEDBACK_OPERATIONS,
  ...WORKSPACES_OPERATIONS,
  ...FILES_OPERATIONS,
  ...STORAGE_LINKS_OPERATIONS,
  ...INDEX_OPERATIONS,
  ...STORE_OPERATIONS,
  ...CONVENTIONS_OPERATIONS,
  ...CHAT_OPERATIONS,
  ...DEALS_OPERATIONS,
  ...PAYMENTS_OPERATIONS,
  ...RECEIPTS_OPERATIONS,
  ...EMAIL_OPERATIONS,
  ...CARDS_OPERATIONS,
  ...MODERATION_OPERATIONS,
  ...PRESENCE_OPERATIONS,
} as const;

export type Operations = typeof OPERATIONS;
export type OperationName = keyof Operations;

export const OPERATION_LIST: readonly Operation[] = Object.values(OPERATIONS);
