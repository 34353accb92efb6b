import type { CapabilitySettings } from '../kernel/settings.ts';

declare module '../kernel/settings.ts' {
  interface CapabilityConfig {
    /** Conventions one agent may register in all (the operator: any number); 0: no limit. */
    conventionsPerAgent: number;
  }
}

/** What the conventions capability reads from the environment. */
export const conventionsSettings: CapabilitySettings = {
  rows: [
    {
      variables: ['CONVENTIONS_PER_AGENT'],
      default: '`20`',
      meaning: 'conventions one agent may register (0: no limit)',
    },
  ],
  read: (env) => ({ conventionsPerAgent: env.integer('CONVENTIONS_PER_AGENT', 20) }),
  services: (config) => ({ conventionsPerAgent: config.conventionsPerAgent }),
};
