import type { CapabilitySettings } from '../kernel/settings.ts';

declare module '../kernel/settings.ts' {
  interface CapabilityConfig {
    /** WEBHOOK_ALLOW_PRIVATE=1: webhooks may reach loopback and private addresses. */
    webhookAllowPrivate: boolean;
    /** WEBHOOK_TIMEOUT_MS: one webhook attempt (look-ups, redirects, answer) ends after this. */
    webhookTimeoutMs: number;
    /**
     * `address:port` pairs webhooks may reach although private; never from the environment:
     * tests let exactly one loopback receiver through, to see what it redirects to refused.
     */
    webhookAllowedTargets?: string[];
  }
}

/** What the webhooks capability reads from the environment. */
export const webhooksSettings: CapabilitySettings = {
  rows: [
    {
      variables: ['WEBHOOK_ALLOW_PRIVATE'],
      default: 'unset',
      meaning:
        '`1`: webhooks may reach loopback, private and link-local addresses (tests, a closed network)',
    },
    {
      variables: ['WEBHOOK_TIMEOUT_MS'],
      default: '`10000`',
      meaning: 'time limit of one webhook attempt (DNS, redirects and the answer)',
    },
  ],
  read: (env) => ({
    webhookAllowPrivate: env.flag('WEBHOOK_ALLOW_PRIVATE'),
    webhookTimeoutMs: env.positive('WEBHOOK_TIMEOUT_MS', 10_000),
  }),
  services: (config) => ({
    webhooks: {
      allowPrivate: config.webhookAllowPrivate,
      timeoutMs: config.webhookTimeoutMs,
      allowedTargets: config.webhookAllowedTargets,
    },
  }),
};
