import { html } from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import type { Handler } from '../kernel/handler.ts';
import { escapeHtml } from '../kernel/escape-html.ts';
import { carryOutByToken, heldCommandByToken, type ConfirmationOutcome } from './confirmations.ts';
import { wantsPage } from './notifications/messages.ts';

export const set_mail_push: Handler<'set_mail_push'> = async ({ services, principal }, input) => {
  if (!(await services.mailPush?.set(principal.agentId, input.push))) {
    throw new ServiceError(
      'no_mail_account',
      'This agent has no mail account: only an agent that signed up by email gets changes by email.',
    );
  }
  return { push: input.push };
};

export const mail_confirmation_page: Handler<'mail_confirmation_page'> = async (
  { services, headers },
  input,
) => {
  const held = await heldCommandByToken(services, input.token);
  const shown = {
    operation: held.operation,
    input: held.input,
    status: held.status === 'done' ? ('done' as const) : ('pending' as const),
    expires_at: held.expiresAt.toISOString(),
  };
  if (!wantsPage(headers.accept)) return shown;
  const action = `/mailgate/confirm?token=${encodeURIComponent(input.token)}`;
  return html(
    page(
      `Confirm ${held.operation}`,
      [
        `<p>A command sent by email from your agent's address waits for your confirmation.`,
        'Nothing has happened yet.</p>',
        `<pre>${escapeHtml(JSON.stringify({ command: held.operation, input: held.input }, null, 2))}</pre>`,
        shown.status === 'done'
          ? '<p>It was carried out already.</p>'
          : `<form method="post" action="${escapeHtml(action)}"><button type="submit">Carry out ${escapeHtml(held.operation)}</button></form>`,
      ].join('\n'),
    ),
  );
};

export const confirm_mail_command: Handler<'confirm_mail_command'> = async (
  { services, headers },
  input,
) => {
  const outcome = await carryOutByToken(services, input.token, services.confirmedRunner);
  if (!wantsPage(headers.accept)) return outcome;
  return html(
    page(`${outcome.operation}: ${outcome.already_done ? 'already done' : 'done'}`, done(outcome)),
  );
};

function done(outcome: ConfirmationOutcome): string {
  return [
    `<p>${outcome.already_done ? 'This command was carried out before; its answer:' : 'Carried out. The answer:'}</p>`,
    `<pre>${escapeHtml(JSON.stringify(outcome.answer, null, 2))}</pre>`,
  ].join('\n');
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1>\n${body}\n</body></html>`;
}
