import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { signedHeaders } from '../../actors/webhooks/signer.ts';
import { CARDS_OPERATIONS, MAX_CARD_SKILLS } from '../../protocol/cards.ts';
import { EVENTS } from '../../protocol/events.ts';
import {
  MAX_MODERATION_REASON,
  MODERATION_ACTIONS,
  MODERATION_OPERATIONS,
} from '../../protocol/moderation.ts';
import { takesIdempotencyKey, type Operation } from '../../protocol/operation.ts';
import {
  MAX_ROTATION_GRACE_HOURS,
  MAX_TOKEN_HOURS,
  MAX_TOKENS_PER_AGENT,
  TOKEN_OPERATIONS,
} from '../../protocol/agents/tokens.ts';
import {
  MAX_WEBHOOK_EVENTS,
  MAX_WEBHOOK_REDIRECTS,
  MAX_WEBHOOK_URL_LENGTH,
  WEBHOOK_GIVE_UP_HOURS,
  WEBHOOK_OPERATIONS,
} from '../../protocol/webhooks.ts';
import { configFromEnv } from '../../server/config.ts';

/**
 * What /protocol and /llms.txt say about account safety (tokens, webhooks, agent cards,
 * moderation) is what the code does: each operation named with its route, each limit the
 * number the code holds, each field of the new events and headers named. A change to one of
 * these that the documents do not follow fails here.
 */
const test = suite('the account-safety sections of /protocol and /llms.txt');

const read = (file: string) =>
  readFileSync(new URL(`../../protocol/documents/${file}`, import.meta.url), 'utf8');
const protocol = read('protocol.md');
const llms = read('llms.txt');

/** The section of /protocol under `## title`, up to the next `## `. */
function section(title: string): string {
  const start = protocol.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `/protocol has a section "${title}"`);
  const end = protocol.indexOf('\n## ', start + 1);
  return protocol.slice(start, end < 0 ? undefined : end);
}

const SAFETY_OPERATIONS: readonly Operation[] = [
  ...Object.values(TOKEN_OPERATIONS),
  ...Object.values(WEBHOOK_OPERATIONS),
  ...Object.values(CARDS_OPERATIONS),
  ...Object.values(MODERATION_OPERATIONS),
];

/** The path as the documents write it: parameters as `<name>`. */
const shown = (operation: Operation) => operation.path.replace(/[:*]([a-z_]+)/g, '<$1>');

test('every operation of tokens, webhooks, cards and moderation is in the table of /protocol with its method and path', () => {
  const table = section('What works today');
  for (const operation of SAFETY_OPERATIONS) {
    const row = table.split('\n').find((line) => line.includes(`\`${operation.name}\``));
    assert.ok(row, `the table has a row naming \`${operation.name}\``);
    assert.ok(
      row.includes(`${operation.method} ${shown(operation)}\``),
      `the row of ${operation.name} shows \`${operation.method} ${shown(operation)}\`: ${row}`,
    );
    if (operation.operatorOnly) assert.match(row, /operator only/);
  }
});

test('every one of them is listed among the MCP tools (the operator-only ones as such), and /llms.txt shows the public ones', () => {
  const doors = section('Doors');
  const mcp = doors.slice(doors.indexOf('**MCP**'), doors.indexOf('5. **Email**'));
  const operatorList = mcp.slice(mcp.indexOf('for the operator only'));
  for (const operation of SAFETY_OPERATIONS) {
    assert.ok(mcp.includes(`\`${operation.name}\``), `the MCP tools name ${operation.name}`);
    assert.is(
      operatorList.includes(`\`${operation.name}\``),
      operation.operatorOnly === true,
      `${operation.name} is listed ${operation.operatorOnly ? 'as' : 'not as'} operator only`,
    );
    if (operation.operatorOnly) {
      assert.not.ok(llms.includes(operation.name), `/llms.txt leaves ${operation.name} out`);
    } else {
      assert.ok(llms.includes(`\`${operation.name}\``), `/llms.txt names ${operation.name}`);
      assert.ok(llms.includes(shown(operation)), `/llms.txt shows ${shown(operation)}`);
    }
  }
});

test('the Idempotency section names exactly those of them that take a key, and those whose answer holds a secret', () => {
  const idempotency = section('Idempotency');
  const takers = idempotency.slice(0, idempotency.indexOf('/openapi.json` lists the header'));
  const secrets = idempotency.slice(idempotency.indexOf('No replay ever hands out a secret'));
  for (const operation of SAFETY_OPERATIONS) {
    const name = `\`${operation.name}\``;
    assert.is(takers.includes(name), takesIdempotencyKey(operation), `${name} takes a key`);
    assert.is(secrets.includes(name), operation.mintsSecret === true, `${name} mints a secret`);
  }
});

test('the limits the documents give are the ones the code holds', () => {
  const tokens = section('API tokens');
  const webhooks = section('Webhooks');
  const number = (n: number) => n.toLocaleString('en-US');
  const says = (text: string, phrase: string, where: string) =>
    assert.ok(text.includes(phrase), `${where} says "${phrase}"`);
  says(tokens, `at most ${MAX_TOKENS_PER_AGENT} live tokens`, 'API tokens');
  says(tokens, `at most ${MAX_TOKEN_HOURS}, one year`, 'API tokens');
  says(tokens, `up to ${MAX_ROTATION_GRACE_HOURS} hours`, 'API tokens');
  says(webhooks, `1 to ${MAX_WEBHOOK_EVENTS} exact types`, 'Webhooks');
  says(webhooks, `At most ${MAX_WEBHOOK_REDIRECTS} redirects`, 'Webhooks');
  says(webhooks, `failed for ${WEBHOOK_GIVE_UP_HOURS} hours`, 'Webhooks');
  says(webhooks, `at most ${number(MAX_WEBHOOK_URL_LENGTH)} characters`, 'Webhooks');
  const timeoutSeconds = configFromEnv({}).webhookTimeoutMs / 1000;
  says(webhooks, `within ${timeoutSeconds} seconds`, 'Webhooks');
  says(llms, `within ${timeoutSeconds} s`, '/llms.txt');
  says(section('Agent cards and portable reputation'), `its ${MAX_CARD_SKILLS} newest`, 'cards');
  says(section('Moderation'), `1 to ${MAX_MODERATION_REASON} characters`, 'Moderation');
});

test('every header a delivery carries is in the header table, as the signer makes it', () => {
  const { privateKey } = generateKeyPairSync('ed25519');
  const headers = signedHeaders('id', 1_700_000_000, '{}', `whsec_${'A'.repeat(44)}`, {
    kid: 'kid',
    privateKey,
  });
  const webhooks = section('Webhooks');
  for (const name of Object.keys(headers)) {
    assert.ok(webhooks.includes(`| \`${name}\` |`), `the header table has ${name}`);
  }
  assert.match(headers['webhook-signature'] ?? '', /^v1,\S+ v1a,\S+$/);
  assert.ok(webhooks.includes('`v1,<base64 HMAC-SHA256>` then a space and `v1a,'));
});

test('the fields of the new events are the ones their schemas hold', () => {
  const keysOf = (type: keyof typeof EVENTS) =>
    Object.keys((EVENTS[type].data as unknown as { shape: Record<string, unknown> }).shape);
  const described: [keyof typeof EVENTS, string][] = [
    ['token.revoked', section('API tokens')],
    ['webhook.disabled', section('Webhooks')],
    ['operator.notice', section('Moderation')],
  ];
  for (const [type, text] of described) {
    assert.ok(text.includes(`\`${type}\``), `the section names ${type}`);
    const shape = /`\{([^`]*)\}`/.exec(text.slice(text.indexOf(`\`${type}\``)))?.[1] ?? '';
    const named = shape
      .replace(/\{[^{}]*\}/g, '')
      .split(',')
      .map((field) => field.trim().replace(/[?:].*$/, ''));
    assert.equal(named.sort(), keysOf(type).sort(), `the fields given for ${type}: {${shape}}`);
  }
  for (const kind of ['file', 'listing', 'message', 'feedback']) {
    assert.ok(section('API tokens').includes(`\`${kind}\``), `found_in kind ${kind}`);
  }
  for (const action of MODERATION_ACTIONS) {
    assert.ok(section('Moderation').includes(`\`${action}\``), `action ${action}`);
  }
  assert.ok(section('Webhooks').includes('`webhook.test`'));
});

test('the receiver of /protocol needs nothing but Node.js: every import is a node: module', () => {
  const block = /```js\n(\/\/ webhook-receiver\.mjs[\s\S]*?)```/.exec(section('Webhooks'))?.[1];
  assert.ok(block, 'the Webhooks section holds the receiver');
  const imports = [...block.matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]);
  assert.ok(imports.length > 0);
  for (const specifier of imports) assert.match(specifier ?? '', /^node:/);
  assert.not.match(block, /\brequire\(/);
  for (const check of ['v1', 'v1a', 'webhook-key-id', 'service-keys.json', 'timingSafeEqual']) {
    assert.ok(block.includes(check), `the receiver handles ${check}`);
  }
});

test('/protocol and /llms.txt say how to keep tokens safe and what to do when one is revoked', () => {
  const safe = section('API tokens');
  for (const place of ['a workspace file', 'a message', 'a listing', 'feedback']) {
    assert.ok(safe.includes(place), `never in ${place}`);
  }
  for (const step of ['`create_token`', '`rotate_token`', '`list_tokens`', '`found_in`']) {
    assert.ok(safe.includes(step), `says to use ${step}`);
  }
  for (const said of ['token.revoked', 'rotate', 'never put one in a workspace file']) {
    assert.ok(llms.includes(said), `/llms.txt says ${said}`);
  }
  assert.ok(section('Doors').includes('token scopes do not apply there'));
});

test.run();
