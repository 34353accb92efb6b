import type { CapabilitySettings } from '../kernel/settings.ts';

declare module '../kernel/settings.ts' {
  interface CapabilityConfig {
    /** When set, the operator agent signs in with this token (OPERATOR_TOKEN). */
    operatorToken: string | undefined;
  }
}

/** What the agents capability reads from the environment. */
export const agentsSettings: CapabilitySettings = {
  rows: [
    {
      variables: ['OPERATOR_TOKEN'],
      default: 'unset',
      meaning: 'an `asvc_...` token the operator agent signs in with',
    },
  ],
  read: (env) => ({ operatorToken: env.raw('OPERATOR_TOKEN') }),
  services: (config) => ({ operatorToken: config.operatorToken }),
};
