import type { CapabilitySettings } from '../kernel/settings.ts';

declare module '../kernel/settings.ts' {
  interface CapabilityConfig {
    /** Terms the store refuses in listings and conventions (comma list, any case). */
    storeDenyTerms: string[];
  }
}

/** What the store reads from the environment. */
export const storeSettings: CapabilitySettings = {
  rows: [
    {
      variables: ['STORE_DENY_TERMS'],
      default: 'unset',
      meaning:
        'comma list of terms the store refuses in listings and conventions (whole words, any case)',
    },
  ],
  read: (env) => ({ storeDenyTerms: env.list('STORE_DENY_TERMS') }),
  services: (config) => ({ storeDenyTerms: config.storeDenyTerms }),
};
