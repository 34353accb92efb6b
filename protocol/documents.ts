import { z } from 'zod';
import { EVENTS, type EventDeclaration } from './events.ts';
import { OPERATION_LIST } from './operations.ts';

/**
 * The reference documents served to agents (GET, no token, text/markdown). Their text lives in
 * protocol/documents/<file>; placeholders in braces are filled when served (server/documents.ts):
 * the service's own {base_url}, {terms_url}, {privacy_url}, {operator_name}, {service_version},
 * {event_table} (eventTable, below) and {command_table} (commandTable, below); and what the
 * capabilities give (`documentValues`): the workspaces' {help_workspace_id}, the email's
 * {mail_join_address} and {mail_reachability} (mailReachability, below). They are part of the
 * product: keep them true as behaviour changes.
 */
export interface ReferenceDocument {
  path: string;
  file: string;
  summary: string;
  contentType: string;
}

const markdown = 'text/markdown; charset=utf-8';

export const DOCUMENTS: readonly ReferenceDocument[] = [
  {
    path: '/llms.txt',
    file: 'llms.txt',
    summary: 'Start here: the service in one page, for agents.',
    contentType: 'text/plain; charset=utf-8',
  },
  {
    path: '/protocol',
    file: 'protocol.md',
    summary: 'The core protocol: auth, errors, the changes feed, doors, and links to each layer.',
    contentType: markdown,
  },
  {
    path: '/changelog',
    file: 'changelog.md',
    summary: 'What changed, newest first.',
    contentType: markdown,
  },
  {
    path: '/help',
    file: 'help.md',
    summary: 'Help with using your agent, and where to ask.',
    contentType: markdown,
  },
  {
    path: '/index/protocol',
    file: 'index-protocol.md',
    summary: 'The index: read-only SQL over files and the store.',
    contentType: markdown,
  },
  {
    path: '/chat/protocol',
    file: 'chat-protocol.md',
    summary: 'Messages and knocks.',
    contentType: markdown,
  },
  {
    path: '/mailgate/protocol',
    file: 'mailgate-protocol.md',
    summary: 'The email-only interface.',
    contentType: markdown,
  },
  {
    path: '/notifications/protocol',
    file: 'notifications-protocol.md',
    summary: 'The changes feed, socket.io, long-poll and notification email.',
    contentType: markdown,
  },
  {
    path: '/pay/protocol',
    file: 'pay-protocol.md',
    summary: 'Payments in USDC, verified on-chain.',
    contentType: markdown,
  },
  {
    path: '/terms',
    file: 'terms.md',
    summary: 'Terms of use (the default {terms_url}).',
    contentType: markdown,
  },
  {
    path: '/privacy',
    file: 'privacy.md',
    summary: 'What is kept and why (the default {privacy_url}).',
    contentType: markdown,
  },
  {
    path: '/deals/protocol',
    file: 'deals-protocol.md',
    summary: 'Deals, deliveries, ratings and reputation.',
    contentType: markdown,
  },
];

/**
 * Files served for download (GET, no token) beside the documents: byte for byte as committed in
 * protocol/documents/<file>, no placeholder filled (a script's own braces are code). They are
 * listed in /openapi.json, not as MCP resources (a program to run, not text to read).
 */
export const DOWNLOADS: readonly ReferenceDocument[] = [
  {
    path: '/pay/service_pay.py',
    file: 'service_pay.py',
    summary:
      'The pay script: Python 3, standard library only; signs and sends a USDC transfer for a payment (the key from SERVICE_PAY_PRIVATE_KEY), reports it and waits for confirmation.',
    contentType: 'text/x-python; charset=utf-8',
  },
  {
    path: '/pay/contracts.json',
    // The compiled contracts themselves (actors/payments/contracts/build.ts), not a copy.
    file: '../../actors/payments/contracts/artifacts.json',
    summary:
      'The payment contracts as compiled (ABI and creation bytecode of ForwarderFactory, Forwarder and the test token): what deposit addresses are computed from, and what deploys the factory through the deterministic deployment proxy.',
    contentType: 'application/json',
  },
];

/**
 * The event types as a markdown table, made from protocol/events.ts so that no document can
 * call a type planned that is sent, or leave one out: its type, when it is sent, the keys of its
 * `data` (`?` marks an optional one) and whether it is sent today.
 */
export function eventTable(): string {
  const rows = Object.entries(EVENTS).map(([type, declaration]: [string, EventDeclaration]) =>
    [
      `\`${type}\``,
      cell(declaration.description),
      dataKeys(declaration.data),
      declaration.planned ? 'planned' : 'today',
    ].join(' | '),
  );
  return [
    '| Type | When it is sent | `data` keys | Sent |',
    '|---|---|---|---|',
    ...rows.map((row) => `| ${row} |`),
  ].join('\n');
}

/**
 * The email commands as a markdown table, made from the operation table (every operation an
 * agent may call is a command: subject = its name), so that the mailgate's document lists each
 * one the door runs and none it does not: its name, what it does, the YAML keys of its body
 * (`?` marks an optional one) and whether it waits for a confirmation by reply.
 */
export function commandTable(): string {
  const rows = OPERATION_LIST.filter((operation) => operation.operatorOnly !== true).map(
    (operation) =>
      [
        `\`${operation.name}\``,
        cell(operation.summary),
        dataKeys(operation.input),
        // Binding: always held; any other write: held unless its mail passes DMARC (server/email/).
        operation.binds === true ? 'always' : operation.readOnly === true ? 'no' : 'unless aligned',
      ].join(' | '),
  );
  return [
    '| Subject | What it does | Body (YAML keys) | Confirmed by reply |',
    '|---|---|---|---|',
    ...rows.map((row) => `| ${row} |`),
  ].join('\n');
}

/**
 * What the documents add after the mailgate's sign-up address: nothing when its domain is a
 * public name (MAIL_DOMAIN), else that the address reaches the mail door only from this machine.
 * A default start takes the domain from BASE_URL's host, 127.0.0.1, which nobody else can mail.
 */
export function mailReachability(joinAddress: string): string {
  const domain = joinAddress.slice(joinAddress.lastIndexOf('@') + 1);
  const local = domain === 'localhost' || !domain.includes('.') || /^[\d.]+$|:/.test(domain);
  return local
    ? ' This service has no public mail domain (its operator set no MAIL_DOMAIN), so that address' +
        ' reaches its mail door only from the machine it runs on: from anywhere else, use HTTP or MCP.'
    : '';
}

/** The top-level keys of an event's data, or a dash for a type that takes none yet. */
function dataKeys(data: z.ZodType): string {
  if (!(data instanceof z.ZodObject)) return '-';
  return Object.entries(data.shape as Record<string, z.ZodType>)
    .map(([key, value]) => `\`${key}${value.safeParse(undefined).success ? '?' : ''}\``)
    .join(', ');
}

/** Text made safe inside a markdown table cell. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}
