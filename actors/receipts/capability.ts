import type { Capability } from '../kernel/capability.ts';
import { getServiceKeys } from './handlers.ts';
import { ReceiptSources } from './receipt-sources.ts';
import { receiptsSettings } from './settings.ts';

declare module '../kernel/services.ts' {
  interface ServiceConfig {
    /** Seals the receipt signing keys at rest, and the webhooks' secrets (RECEIPT_KEY_SECRET). */
    receiptKeySecret?: string | undefined;
  }
  interface Services {
    /** Where each capability that issues receipts keeps them (./receipt-sources.ts). */
    readonly receiptSources: ReceiptSources;
  }
}

/**
 * Receipts: the public half of the signing keys, and where the capabilities that issue receipts
 * say they keep them (started first, so that theirs can add to it). The keys themselves are made
 * at the files capability's start-up (files sign receipts first).
 */
export const receipts = {
  name: 'receipts',
  settings: receiptsSettings,
  handlers: {
    get_service_keys: getServiceKeys,
  },
  async startUp(services) {
    services.provide('receiptSources', new ReceiptSources());
  },
} satisfies Capability;
