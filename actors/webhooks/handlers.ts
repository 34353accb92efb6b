import { ServiceError } from '../../protocol/errors.ts';
import {
  deleteWebhook as deleteWebhookRow,
  eventIdAt,
  findWebhook,
  lockFeedHead,
  putWebhook,
} from '../../storage/webhooks.ts';
import type { Handler } from '../kernel/handler.ts';
import { notFound } from '../kernel/principal.ts';
import { encodeCursor } from '../../protocol/events.ts';
import { AddressRefused, checkedAddress } from './address-guard.ts';
import { newWebhookSecret } from './signer.ts';

const iso = (at: Date | null) => (at ? at.toISOString() : null);

export const setWebhook: Handler<'set_webhook'> = async ({ services, principal }, input) => {
  const url = new URL(input.url);
  try {
    // A resolver that never answers must not hold the request: the attempt's time limit applies.
    const settings = services.webhookSettings;
    await Promise.race([
      checkedAddress(url, settings),
      new Promise((_, reject) => {
        const timer = setTimeout(
          () => reject(new AddressRefused(`${url.hostname} did not resolve in time`)),
          settings.timeoutMs,
        );
        timer.unref();
      }),
    ]);
  } catch (error) {
    if (!(error instanceof AddressRefused)) throw error;
    throw new ServiceError(
      'webhook_url_refused',
      `Webhooks may not reach this URL: ${error.message}.`,
      {
        url: input.url,
      },
    );
  }
  const agentId = principal.agentId;
  const secret = newWebhookSecret();
  const events = input.events ? [...new Set(input.events)] : null;
  await services.commit(async (tx) => {
    await putWebhook(tx, {
      agentId,
      url: input.url,
      events,
      secretCipher: services.webhookSecrets.seal(secret, agentId),
      at: new Date(services.clock.now()),
    });
    return { result: undefined, afterCommit: () => services.webhookDelivery.watch(agentId) };
  });
  return { url: input.url, events, secret };
};

export const getWebhook: Handler<'get_webhook'> = async ({ services, principal }) => {
  const webhook = await findWebhook(services.db(), principal.agentId);
  if (!webhook) throw notFound('webhook');
  return {
    url: webhook.url,
    events: webhook.events,
    created_at: webhook.createdAt.toISOString(),
    delivered_cursor: encodeCursor(webhook.deliveredSeq),
    failing_since: iso(webhook.failingSince),
    last_error: webhook.lastError,
    next_attempt_at: iso(webhook.nextAttemptAt),
    disabled_at: iso(webhook.disabledAt),
  };
};

export const deleteWebhook: Handler<'delete_webhook'> = async ({ services, principal }) => {
  const deleted = await services.commit(async (tx) => ({
    result: await deleteWebhookRow(tx, principal.agentId),
  }));
  if (!deleted) throw notFound('webhook');
  return { deleted: true };
};

export const testWebhook: Handler<'test_webhook'> = async ({ services, principal }) => {
  const agentId = principal.agentId;
  const seq = await services.commit(async (tx) => {
    const webhook = await findWebhook(tx, agentId);
    if (!webhook) throw notFound('webhook');
    // The feed head locked: the ping appended below is the next seq, whose event id we answer.
    const head = await lockFeedHead(tx, agentId);
    return {
      result: head + 1,
      changes: [
        {
          agentId,
          type: 'webhook.test' as const,
          data: { url: webhook.url, message: 'A test delivery, as asked with test_webhook.' },
        },
      ],
    };
  });
  const deliveryId = await eventIdAt(services.db(), agentId, seq);
  if (!deliveryId) throw new Error(`the webhook.test change of ${agentId} was not found`);
  return { delivery_id: deliveryId };
};
