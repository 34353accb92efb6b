import type { CapabilitySettings } from '../kernel/settings.ts';

declare module '../kernel/settings.ts' {
  interface CapabilityConfig {
    /** Seals the receipt-signing keys (and webhook secrets) at rest when set. */
    receiptKeySecret: string | undefined;
  }
}

/** What the receipts capability reads from the environment. */
export const receiptsSettings: CapabilitySettings = {
  rows: [
    {
      variables: ['RECEIPT_KEY_SECRET'],
      default: 'unset',
      meaning:
        'seals the receipt-signing keys and webhook secrets in the database; set 32 random bytes in production',
    },
  ],
  read: (env) => ({ receiptKeySecret: env.raw('RECEIPT_KEY_SECRET') }),
  services: (config) => ({ receiptKeySecret: config.receiptKeySecret }),
};
