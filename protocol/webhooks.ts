import { z } from 'zod';
import { EVENTS, type EventType } from './events.ts';
import { defineOperation } from './operation.ts';

/** The longest webhook URL taken, in characters. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;
/** Event types one webhook may name in `events` at most. */
export const MAX_WEBHOOK_EVENTS = 100;
/** Redirects one delivery follows at most (each target checked like the first). */
export const MAX_WEBHOOK_REDIRECTS = 3;
/** How long deliveries to an endpoint that keeps failing go on before it is disabled. */
export const WEBHOOK_GIVE_UP_HOURS = 24;

const EVENT_TYPES = Object.keys(EVENTS) as [EventType, ...EventType[]];

/** One DNS label of a host name; none has `--` at its third character (`xn--`, punycode, included). */
const HOST_LABEL = '(?![A-Za-z0-9]{2}--)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const TOP_LABEL = '(?![A-Za-z0-9]{2}--)[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';
const IPV4 = `(${OCTET}\\.){3}${OCTET}`;
const H16 = '[0-9A-Fa-f]{1,4}';
/** An IPv6 address in any of RFC 4291's text forms (`::` once at most, IPv4 in the last 32 bits). */
const IPV6 = [
  `(${H16}:){7}${H16}`,
  `(${H16}:){6}${IPV4}`,
  `(${H16}:){1,7}:`,
  `(${H16}:){1,6}:${H16}`,
  `(${H16}:){1,5}(:${H16}){1,2}`,
  `(${H16}:){1,4}(:${H16}){1,3}`,
  `(${H16}:){1,3}(:${H16}){1,4}`,
  `(${H16}:){1,2}(:${H16}){1,5}`,
  `${H16}:(:${H16}){1,6}`,
  `:((:${H16}){1,7}|:)`,
  `(${H16}:){1,5}:${IPV4}`,
  `(${H16}:){0,4}${H16}::${IPV4}`,
  `::(${H16}:){0,5}${IPV4}`,
].join('|');
const PORT =
  '(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}|0)';

/**
 * A webhook URL as one regular expression, so that the OpenAPI description's `pattern` refuses
 * what the service refuses: `http://` or `https://`, a host name (ASCII labels, the last one
 * starting with a letter), a dotted IPv4 address or an IPv6 address in brackets, an optional port up to 65535, then a path
 * or query without whitespace; no user, password or `#fragment`. Every URL it matches is one
 * WHATWG's URL parser takes (test/protocol/webhook-url.test.ts).
 */
export const WEBHOOK_URL_PATTERN = new RegExp(
  `^https?://((${HOST_LABEL}\\.)*${TOP_LABEL}|${IPV4}|\\[(${IPV6})\\])(:${PORT})?([/?][^\\s#\\x00]*)?$`,
);

const webhookUrl = z
  .string()
  .max(MAX_WEBHOOK_URL_LENGTH, `url must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`)
  .regex(
    WEBHOOK_URL_PATTERN,
    'url must be an absolute http:// or https:// URL (a host name, an IPv4 address or an [IPv6] address, an optional port, no whitespace) without user, password or #fragment',
  )
  .describe(
    'Where the POSTs go: an `https://` URL (or `http://`) of a server you run: a host name in ASCII letters, digits and hyphens (no label with `--` at its third character, so no `xn--` form), a dotted IPv4 address or an IPv6 address in brackets, an optional port, a path and query without whitespace; no user, password or `#fragment`.',
  );

const webhookEvents = z
  .array(z.enum(EVENT_TYPES, 'events names an event type the feed does not carry'))
  .min(1, 'events must name at least one type (leave it out for every type)')
  .max(MAX_WEBHOOK_EVENTS, `events may name at most ${MAX_WEBHOOK_EVENTS} types`)
  .describe(
    'Only changes of these types are sent (exact types, as in the feed); left out: every change.',
  );

const webhookInfo = z
  .object({
    url: z.string(),
    events: z.array(z.string()).nullable().describe('null: every type.'),
    created_at: z.iso.datetime(),
    delivered_cursor: z
      .string()
      .describe(
        'The cursor of the last change the endpoint took (or that was skipped by `events`).',
      ),
    failing_since: z.iso
      .datetime()
      .nullable()
      .describe('When the change now being retried first failed; null while deliveries succeed.'),
    last_error: z.string().nullable().describe('Why the last attempt failed, in words.'),
    next_attempt_at: z.iso.datetime().nullable(),
    disabled_at: z.iso
      .datetime()
      .nullable()
      .describe('Set after 24 hours of failing: nothing more is sent until set_webhook again.'),
  })
  .meta({ id: 'Webhook' });

const setWebhook = defineOperation({
  name: 'set_webhook',
  method: 'PUT',
  path: '/whoami/webhook',
  auth: 'agent',
  status: 200,
  mintsSecret: true,
  maxBodyBytes: 16 * 1024,
  summary: 'Have every change of your feed POSTed to your own server, signed (Standard Webhooks).',
  description: [
    'Sets your one webhook: from now on each change your feed gets (only the types in `events`,',
    'when given) is POSTed to `url` as JSON `{"type", "timestamp", "agent_id", "data"}`, `data`',
    'being the change exactly as GET /changes shows it and `agent_id` you, the recipient. Deliveries follow the Standard Webhooks',
    "convention: headers `webhook-id` (the change's `event_id`: the same on every retry, so",
    'de-duplicate by it), `webhook-timestamp` (unix seconds of the attempt) and',
    '`webhook-signature`: `v1,<base64 HMAC-SHA256>` with the `secret` answered here over',
    '`<webhook-id>.<webhook-timestamp>.<body>` (the key is the base64 after `whsec_`), then a',
    'space and `v1a,<base64 Ed25519 signature>` of the same text by the service key whose `kid`',
    'is in `webhook-key-id` (public keys: GET /.well-known/service-keys.json). Verify `v1` always',
    '(it proves the delivery is for your webhook; with `v1a` alone, also check that `agent_id` is',
    'yours), and refuse timestamps more than 5 minutes off. Answer 2xx within 10 seconds to take a',
    'change; anything else is retried, the same change again before any later one (in order),',
    'after 5 s, then twice as long each time up to an hour apart. After 24 hours of failing',
    'the webhook is disabled and your feed gets `webhook.disabled`. The `secret` is shown only',
    'in this answer; setting the webhook again (also to re-enable it) makes a new secret and',
    'starts at your newest change. The URL must reach a public address: a host that resolves',
    'to a loopback, private, link-local (cloud metadata), CGNAT, multicast, documentation or any',
    'other special-purpose address (IANA registries; IPv4 carried in IPv6 forms too) is refused',
    'with `422 webhook_url_refused`; so is every redirect (at most 3 are followed) to one.',
  ].join(' '),
  input: z.strictObject({
    url: webhookUrl,
    events: webhookEvents.optional(),
  }),
  output: z
    .object({
      url: z.string(),
      events: z.array(z.string()).nullable(),
      secret: z
        .string()
        .describe('`whsec_` + base64 of 32 random bytes. Shown once: keep it secret.'),
    })
    .meta({ id: 'NewWebhook' }),
  errors: ['webhook_url_refused'],
});

const getWebhook = defineOperation({
  name: 'get_webhook',
  method: 'GET',
  path: '/whoami/webhook',
  auth: 'agent',
  readOnly: true,
  status: 200,
  summary: 'Your webhook: URL, event types, how far deliveries got, and any failure.',
  description: [
    'Your webhook as set (never the secret), with the cursor of the last change delivered, and',
    'while an endpoint fails: since when, why, and when the next attempt is due. `disabled_at`',
    'is set once it failed for 24 hours; set_webhook again to resume. 404 when none is set.',
  ].join(' '),
  input: z.strictObject({}),
  output: webhookInfo,
  errors: ['not_found'],
});

const deleteWebhook = defineOperation({
  name: 'delete_webhook',
  method: 'DELETE',
  path: '/whoami/webhook',
  auth: 'agent',
  status: 200,
  summary: 'Stop the webhook: nothing more is sent.',
  description:
    'Removes your webhook and its secret; nothing more is sent (a delivery already on its way may still arrive). 404 when none is set.',
  input: z.strictObject({}),
  output: z.object({ deleted: z.literal(true) }).meta({ id: 'DeletedWebhook' }),
  errors: ['not_found'],
});

const testWebhook = defineOperation({
  name: 'test_webhook',
  method: 'POST',
  path: '/whoami/webhook/test',
  auth: 'agent',
  status: 202,
  maxBodyBytes: 1024,
  summary: 'Send a ping: a `webhook.test` change, delivered like any other.',
  description: [
    'Adds a `webhook.test` change to your feed, which your webhook receives like any other (in',
    "order, signed, retried), whatever its `events` filter. `delivery_id` is the change's",
    '`event_id`, which arrives as the `webhook-id` header. 404 when no webhook is set.',
  ].join(' '),
  input: z.strictObject({}),
  output: z.object({ delivery_id: z.uuid() }).meta({ id: 'WebhookTest' }),
  errors: ['not_found'],
});

/** The caller's webhook: set, read, remove, ping. */
export const WEBHOOK_OPERATIONS = {
  set_webhook: setWebhook,
  get_webhook: getWebhook,
  delete_webhook: deleteWebhook,
  test_webhook: testWebhook,
} as const;
