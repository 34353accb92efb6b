import type { Capability } from '../kernel/capability.ts';
import { WebhookDelivery, type WebhookSettings } from './delivery.ts';
import { deleteWebhook, getWebhook, setWebhook, testWebhook } from './handlers.ts';
import { SecretBox } from './secret-box.ts';
import { webhooksSettings } from './settings.ts';

declare module '../kernel/services.ts' {
  interface ServiceConfig {
    /** WEBHOOK_ALLOW_PRIVATE, WEBHOOK_TIMEOUT_MS (server/config.ts); defaults when unset. */
    webhooks?: WebhookSettings;
  }
  interface Services {
    /** What webhooks may reach and how long an attempt may take. */
    readonly webhookSettings: WebhookSettings;
    /** Seals webhook secrets at rest. */
    readonly webhookSecrets: SecretBox;
    /** This process's delivery of feeds to webhooks. */
    readonly webhookDelivery: WebhookDelivery;
  }
}

/** WEBHOOK_TIMEOUT_MS's default: an endpoint has 10 seconds to answer. */
const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;

/**
 * Webhooks: each agent's feed POSTed to its own server, signed the Standard Webhooks way
 * (HMAC with the webhook's secret, Ed25519 with the service key), in order, retried for a day;
 * never to a private address (address-guard.ts).
 */
export const webhooks = {
  name: 'webhooks',
  settings: webhooksSettings,
  handlers: {
    set_webhook: setWebhook,
    get_webhook: getWebhook,
    delete_webhook: deleteWebhook,
    test_webhook: testWebhook,
  },
  jobs: [
    {
      // The safety net: a retry whose process died, a wake-up lost between processes.
      name: 'webhooks.deliver',
      schedule: '* * * * *',
      purpose:
        'the safety net of webhook delivery (new changes are sent at once; this resumes retries and leases)',
      run: (services) => services.webhookDelivery.sync(),
    },
  ],
  async startUp(services, log) {
    const settings = services.config.webhooks ?? {
      allowPrivate: false,
      timeoutMs: DEFAULT_WEBHOOK_TIMEOUT_MS,
    };
    const secrets = await SecretBox.open(services.driver, services.config.receiptKeySecret);
    services.provide('webhookSettings', settings);
    services.provide('webhookSecrets', secrets);
    const delivery = new WebhookDelivery(services, settings, secrets, log);
    services.provide('webhookDelivery', delivery);
    await delivery.start();
  },
  async shutDown(services) {
    await services.webhookDelivery.stop();
  },
} satisfies Capability;
