import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { ServiceError } from '../../protocol/errors.ts';
import {
  claimMailConfirmation,
  findMailConfirmation,
  findMailConfirmationByToken,
  insertMailConfirmation,
  replaceMailConfirmationToken,
  setMailConfirmationAnswer,
  type MailConfirmationRow,
} from '../../storage/email/confirmations.ts';
import type { Services } from '../kernel/services.ts';

/** How long a command held from an email waits for its confirmation. */
const LIFETIME_MS = 24 * 60 * 60 * 1000;

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');
const newToken = () => randomBytes(24).toString('base64url');

/** Runs a confirmed command as its agent and gives its answer (or its problem object). */
export type ConfirmedRunner = (
  agentId: string,
  operation: string,
  input: Record<string, unknown>,
) => Promise<unknown>;

/** The link that confirms a command without a reply. */
export function confirmationLink(services: Services, token: string): string {
  return `${services.config.baseUrl}/mailgate/confirm?token=${token}`;
}

/** Keeps a command (binding, or sent in unaligned mail) until it is confirmed; gives its id and its link's token. */
export async function holdBindingCommand(
  services: Services,
  agentId: string,
  operation: string,
  input: Record<string, unknown>,
): Promise<{ confirmationId: string; token: string }> {
  const token = newToken();
  const now = services.clock.now();
  const confirmationId = randomUUID();
  await insertMailConfirmation(services.db(), {
    confirmationId,
    tokenHash: hashOf(token),
    agentId,
    operation,
    input,
    createdAt: new Date(now),
    expiresAt: new Date(now + LIFETIME_MS),
  });
  return { confirmationId, token };
}

/** A fresh link for a pending confirmation (an unaligned reply gets one; the old one dies). */
export async function renewConfirmationLink(
  services: Services,
  confirmationId: string,
): Promise<string> {
  const token = newToken();
  await replaceMailConfirmationToken(services.db(), confirmationId, hashOf(token));
  return token;
}

export function confirmationOf(
  services: Services,
  confirmationId: string,
): Promise<MailConfirmationRow | null> {
  return findMailConfirmation(services.db(), confirmationId);
}

/** What a confirmation did: ran the command now, or found it done (with the kept answer). */
export interface ConfirmationOutcome {
  operation: string;
  already_done: boolean;
  answer: unknown;
}

/**
 * Carries out a held command once: the first confirmation claims it and runs it, any later
 * one answers `already_done` with the answer kept. Expired or unknown: 404 `not_found`.
 */
export async function carryOut(
  services: Services,
  confirmation: MailConfirmationRow | null,
  runner: ConfirmedRunner,
): Promise<ConfirmationOutcome> {
  const now = new Date(services.clock.now());
  if (!confirmation || (confirmation.status !== 'done' && confirmation.expiresAt <= now)) {
    throw new ServiceError(
      'not_found',
      'No held command waits for this confirmation (it is unknown, or older than 24 hours).',
    );
  }
  const { confirmationId, operation } = confirmation;
  if (
    confirmation.status === 'done' ||
    !(await claimMailConfirmation(services.db(), confirmationId, now))
  ) {
    const kept = await findMailConfirmation(services.db(), confirmationId);
    return { operation, already_done: true, answer: kept?.answer ?? null };
  }
  const answer = await runner(confirmation.agentId, operation, confirmation.input);
  await setMailConfirmationAnswer(services.db(), confirmationId, answer);
  return { operation, already_done: false, answer };
}

/** The command a link's token holds, as its page shows it (expired or unknown: 404). */
export async function heldCommandByToken(
  services: Services,
  token: string,
): Promise<MailConfirmationRow> {
  const found = await findMailConfirmationByToken(services.db(), hashOf(token));
  if (!found || (found.status !== 'done' && found.expiresAt <= new Date(services.clock.now()))) {
    throw new ServiceError(
      'not_found',
      'No held command waits for this confirmation (it is unknown, or older than 24 hours).',
    );
  }
  return found;
}

export async function carryOutByToken(
  services: Services,
  token: string,
  runner: ConfirmedRunner,
): Promise<ConfirmationOutcome> {
  return carryOut(
    services,
    await findMailConfirmationByToken(services.db(), hashOf(token)),
    runner,
  );
}
