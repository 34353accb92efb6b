import { createHash, randomInt, randomUUID } from 'node:crypto';
import {
  claimMailSignUp,
  countMailSignUpsSince,
  countWrongMailSignUpCode,
  insertMailSignUp,
  pendingMailSignUp,
  setMailSignUpAgent,
} from '../../storage/email/sign-ups.ts';
import type { Services } from '../kernel/services.ts';

/** How long a sign-up code stays good. */
const CODE_LIFETIME_MS = 60 * 60 * 1000;
/** Wrong codes that void a sign-up. */
export const WRONG_CODES_VOID = 5;
const HOUR_MS = 60 * 60 * 1000;

const hashOf = (code: string) => createHash('sha256').update(code).digest('hex');

/**
 * What a sign-up mail starts: a code to send, one refusal when the sender passed its hourly
 * limit (marked by a voided row, so the next ones in the hour are silent), or silence.
 */
export type SignUpStart = { kind: 'code'; code: string } | { kind: 'refused' } | { kind: 'silent' };

export async function startMailSignUp(
  services: Services,
  senderAddress: string,
  name: string,
): Promise<SignUpStart> {
  const db = services.db();
  const now = new Date(services.clock.now());
  const limit = services.config.mail!.signUpLimitPerHour;
  const started = await countMailSignUpsSince(db, senderAddress, new Date(now.getTime() - HOUR_MS));
  const base = { signupId: randomUUID(), senderAddress, name, createdAt: now };
  if (limit > 0 && started >= limit) {
    if (started > limit) return { kind: 'silent' };
    await insertMailSignUp(db, { ...base, codeHash: '', status: 'voided', expiresAt: now });
    return { kind: 'refused' };
  }
  const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
  await insertMailSignUp(db, {
    ...base,
    codeHash: hashOf(code),
    status: 'pending',
    expiresAt: new Date(now.getTime() + CODE_LIFETIME_MS),
  });
  return { kind: 'code', code };
}

/** What a code reply finds: the sign-up to carry out, a wrong code, or nothing pending. */
export type CodeCheck =
  | { kind: 'right'; signupId: string; name: string }
  | { kind: 'wrong'; left: number }
  | { kind: 'none' };

/** Checks the first 6-digit number of `text` against the sender's pending sign-up. */
export async function checkMailSignUpCode(
  services: Services,
  senderAddress: string,
  text: string,
): Promise<CodeCheck> {
  const db = services.db();
  const pending = await pendingMailSignUp(db, senderAddress, new Date(services.clock.now()));
  if (!pending) return { kind: 'none' };
  const code = /(?<!\d)\d{6}(?!\d)/.exec(text)?.[0];
  if (code === undefined || hashOf(code) !== pending.codeHash) {
    const wrong = await countWrongMailSignUpCode(db, pending.signupId, WRONG_CODES_VOID);
    return { kind: 'wrong', left: Math.max(0, WRONG_CODES_VOID - wrong) };
  }
  if (!(await claimMailSignUp(db, pending.signupId))) return { kind: 'none' };
  return { kind: 'right', signupId: pending.signupId, name: pending.name };
}

export function recordMailSignUpAgent(services: Services, signupId: string, agentId: string) {
  return setMailSignUpAgent(services.db(), signupId, agentId);
}
