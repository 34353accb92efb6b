import type { Capability } from '../kernel/capability.ts';
import { getServiceKeys } from './handlers.ts';
import { receiptsSettings } from './settings.ts';

declare module '../kernel/services.ts' {
  interface ServiceConfig {
    /** Seals the receipt signing keys at rest, and the webhooks' secrets (RECEIPT_KEY_SECRET). */
    receiptKeySecret?: string | undefined;
  }
}

/**
 * Receipts: the public half of the signing keys. The keys themselves are made at the files
 * capability's start-up (files sign receipts first), so this capability only answers.
 */
export const receipts = {
  name: 'receipts',
  settings: receiptsSettings,
  handlers: {
    get_service_keys: getServiceKeys,
  },
} satisfies Capability;
