/**
 * The x402 facilitator the operator names (X402_FACILITATOR_URL): a third party that submits a
 * signed EIP-3009 authorization on-chain and pays the gas, through x402 v2's HTTP API
 * (`POST /verify`, `POST /settle`, each `{x402Version, paymentPayload, paymentRequirements}`).
 * The service holds no key and moves no money: the facilitator's transaction moves it from the
 * payer to the payee (or the deposit address), and the payment is credited only when the
 * service sees that transfer on-chain itself. Every call goes through the bounded outgoing
 * request (actors/kernel/outgoing-request.ts): one deadline, a small answer.
 */
import { boundedRequest } from '../../kernel/outgoing-request.ts';

/** Settling waits for the facilitator's transaction to be mined: give it a block or few. */
const SETTLE_TIMEOUT_MS = 30_000;
const VERIFY_TIMEOUT_MS = 10_000;
/** A facilitator's answer is a small JSON object. */
const MAX_ANSWER_BYTES = 16 * 1024;

export interface FacilitatorRequest {
  x402Version: number;
  paymentPayload: Record<string, unknown>;
  paymentRequirements: Record<string, unknown>;
}

/**
 * What the facilitator said: yes (with its transaction, for a settlement), no (`refused`, its
 * reason in `error`), or nothing usable (`unreachable`: no answer in time, or not one of x402's).
 */
export type FacilitatorOutcome =
  | { ok: true; transaction?: string; payer?: string }
  | { ok: false; kind: 'refused' | 'unreachable'; error: string };

async function call(
  baseUrl: string,
  path: 'verify' | 'settle',
  body: FacilitatorRequest,
  timeoutMs: number,
): Promise<{ answer: Record<string, unknown> } | { failure: string }> {
  try {
    const answer = await boundedRequest(
      new URL(`${baseUrl}/${path}`),
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body, (_key, value: unknown) =>
          typeof value === 'bigint' ? value.toString() : value,
        ),
      },
      { timeoutMs, maxAnswerBytes: MAX_ANSWER_BYTES },
    );
    if (answer.truncated) {
      return { failure: `its ${path} answer is larger than ${MAX_ANSWER_BYTES} bytes` };
    }
    const parsed: unknown = JSON.parse(answer.body.toString('utf8'));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      return { failure: `its ${path} answer (HTTP ${answer.status}) is not a JSON object` };
    }
    return { answer: parsed as Record<string, unknown> };
  } catch (error) {
    return { failure: `it could not be asked to ${path}: ${(error as Error).message}` };
  }
}

const text = (value: unknown) => (typeof value === 'string' ? value.slice(0, 200) : undefined);

/** Asks the facilitator whether it would settle the payment (`isValid`). */
export async function facilitatorVerify(
  baseUrl: string,
  body: FacilitatorRequest,
): Promise<FacilitatorOutcome> {
  const called = await call(baseUrl, 'verify', body, VERIFY_TIMEOUT_MS);
  if ('failure' in called) {
    return { ok: false, kind: 'unreachable', error: `the facilitator: ${called.failure}` };
  }
  const { answer } = called;
  if (answer.isValid === true) return { ok: true, payer: text(answer.payer) };
  if (answer.isValid !== false) {
    return {
      ok: false,
      kind: 'unreachable',
      error: 'the facilitator: its verify answer has no isValid',
    };
  }
  const reason = text(answer.invalidReason) ?? 'no reason given';
  const message = text(answer.invalidMessage);
  return {
    ok: false,
    kind: 'refused',
    error: `the facilitator refused it: ${reason}${message ? ` (${message})` : ''}`,
  };
}

/** Asks the facilitator to submit the authorization; its transaction when it did. */
export async function facilitatorSettle(
  baseUrl: string,
  body: FacilitatorRequest,
): Promise<FacilitatorOutcome> {
  const called = await call(baseUrl, 'settle', body, SETTLE_TIMEOUT_MS);
  if ('failure' in called) {
    return { ok: false, kind: 'unreachable', error: `the facilitator: ${called.failure}` };
  }
  const { answer } = called;
  const transaction = text(answer.transaction);
  if (answer.success === true && transaction && /^0x[0-9a-fA-F]{64}$/.test(transaction)) {
    return { ok: true, transaction: transaction.toLowerCase(), payer: text(answer.payer) };
  }
  const reason = text(answer.errorReason) ?? 'no transaction';
  const message = text(answer.errorMessage);
  return {
    ok: false,
    kind: 'refused',
    error: `the facilitator did not settle it: ${reason}${message ? ` (${message})` : ''}`,
  };
}
