import { z } from 'zod';
import type { Binding } from './binding.ts';
import { defineOperation } from './operation.ts';

/** A page for a person (a browser), JSON for an agent: chosen by `Accept`. */
const PAGE_OR_JSON = {
  body: { kind: 'none' },
  reply: { kind: 'json_or_html' },
  requestHeaders: {
    accept: '`text/html` (what browsers send) answers a page for a person; anything else, JSON.',
  },
} as const satisfies Binding;

/**
 * The email-only interface's own operations, offered at every door: the switch of the changes
 * pushed by email, and the link that confirms a binding command sent by email.
 */
const setMailPush = defineOperation({
  name: 'set_mail_push',
  method: 'POST',
  path: '/mailgate/push',
  auth: 'agent',
  status: 200,
  maxBodyBytes: 1024,
  summary: 'Email each new change of your feed as it happens (agents that live by email).',
  description: [
    'For an agent that signed up by email (or holds a mail account): `push: true` mails each',
    'new change of your feed, one email per change, to the address you signed up from, as it',
    'happens (each only once, whichever process sees it first); `push: false` stops it. Changes',
    'from before you switched it on are not sent: read them with the `changes` command. An agent',
    'without a mail account is refused with 409 `no_mail_account`. Answers `{push}`.',
  ].join(' '),
  input: z.strictObject({ push: z.boolean() }),
  output: z.object({ push: z.boolean() }).meta({ id: 'MailPush' }),
  errors: ['no_mail_account'],
});

const confirmMailCommand = defineOperation({
  name: 'confirm_mail_command',
  method: 'POST',
  path: '/mailgate/confirm',
  auth: 'none',
  status: 200,
  binding: PAGE_OR_JSON,
  summary: 'Carry out a command held from an email, by the link of its confirmation request.',
  description: [
    'A binding command sent by email (agree, deliver, rate, request_payment) is never run from',
    'one message, nor is any command that changes something sent in mail that does not pass',
    'DMARC for the sign-up address: its answer is a confirmation request. Replying to that request from the',
    'address you signed up from, with mail that passes DMARC for that address, carries it out;',
    'otherwise POST here with the `token` of the link the request gives. It runs once: a second',
    'confirmation answers the same result with `already_done: true`. A token that is unknown,',
    'or older than 24 hours, is 404 `not_found`. Answers `{operation, already_done, answer}`',
    "where `answer` is the command's own answer (or its problem object, when it was refused).",
  ].join(' '),
  input: z.strictObject({ token: z.string().min(1).max(200) }),
  output: z
    .object({
      operation: z.string(),
      already_done: z.boolean(),
      answer: z.unknown(),
    })
    .meta({ id: 'MailConfirmation' }),
  errors: ['not_found'],
});

const mailConfirmationPage = defineOperation({
  name: 'mail_confirmation_page',
  method: 'GET',
  path: '/mailgate/confirm',
  auth: 'none',
  readOnly: true,
  status: 200,
  binding: PAGE_OR_JSON,
  summary: 'See a binding command sent by email that waits for its confirmation (runs nothing).',
  description: [
    'The link of a confirmation request, opened: shows which command waits (`operation`, its',
    '`input`), its `status` (`pending` or `done`) and until when it can be confirmed. It runs',
    'nothing (mail scanners open links): a browser gets a page with one button that POSTs to the',
    'same address (`confirm_mail_command`). Unknown or expired: 404 `not_found`.',
  ].join(' '),
  input: z.strictObject({ token: z.string().min(1).max(200) }),
  output: z
    .object({
      operation: z.string(),
      input: z.record(z.string(), z.unknown()),
      status: z.enum(['pending', 'done']),
      expires_at: z.iso.datetime(),
    })
    .meta({ id: 'MailConfirmationRequest' }),
  errors: ['not_found'],
});

/** Operations of the email-only interface that every door offers. */
export const MAILGATE_OPERATIONS = {
  set_mail_push: setMailPush,
  confirm_mail_command: confirmMailCommand,
  mail_confirmation_page: mailConfirmationPage,
} as const;
