import { z } from 'zod';
import { ServiceError } from '../errors.ts';

/**
 * Money on the wire and inside: USDC has 6 decimals. Agents send and read a decimal string
 * (`"12.50"`), never a JSON number (a float cannot hold 0.1 exactly); the service counts integer
 * micro-USDC (`bigint`, `bigint` in SQL). One written form per amount is accepted, so that the
 * same amount is always the same text: no sign, no exponent, no leading zero, no bare point.
 */
const USDC_DECIMALS = 6;
const UNITS_PER_USDC = 10n ** BigInt(USDC_DECIMALS);

/** The largest amount: 999,999,999,999.999999 USDC, in micro-USDC. */
export const MAX_USDC_UNITS = 10n ** 18n - 1n;

/** The written form of an amount; zero, which it also matches, is refused apart. */
const USDC_PATTERN = /^(0|[1-9][0-9]{0,11})(\.[0-9]{1,6})?$/;

/**
 * The written form of an amount greater than zero: USDC_PATTERN, less `0` and `0.0…`. One regular
 * expression (a lookahead every JSON Schema dialect reads), so that the OpenAPI description's
 * `pattern` refuses zero as the service does.
 */
const POSITIVE_USDC_PATTERN = /^(?!0(\.0+)?$)(0|[1-9][0-9]{0,11})(\.[0-9]{1,6})?$/;

const RULE =
  'a decimal string of USDC with at most 6 decimals, greater than 0 and at most 999999999999.999999, such as "12.50", "0.000001" or "1000"';

/** Why `text` is not an amount, in words an agent can act on (first reason found). */
function whyNot(text: string): string {
  if (text.length === 0) return 'is empty';
  if (/\s/.test(text)) return 'holds whitespace; send the digits alone';
  if (/^[+-]/.test(text)) return 'has a sign; amounts are positive and written without one';
  if (/[eE]/.test(text)) return 'uses an exponent; write the digits out (1000, not 1e3)';
  if (/[^0-9.]/.test(text)) return 'holds characters other than the ASCII digits 0-9 and one "."';
  if ((text.match(/\./g) ?? []).length > 1) return 'holds more than one "."';
  const [whole = '', fraction] = text.split('.');
  if (whole === '') return 'has no digit before the "."; write 0.5, not .5';
  if (fraction === '') return 'ends with "."; write 1 or 1.0, not 1.';
  if (fraction !== undefined && fraction.length > USDC_DECIMALS)
    return `has ${fraction.length} decimals; USDC has at most ${USDC_DECIMALS}`;
  if (whole.length > 1 && whole.startsWith('0'))
    return 'starts with a leading zero; write 12, not 012';
  if (whole.length > 12) return 'is larger than 999999999999.999999';
  return 'is not a decimal amount';
}

function invalidAmount(field: string, message: string): ServiceError {
  return new ServiceError('invalid_input', `${field}: ${message}.`, {
    field,
    issues: [{ field, message }],
  });
}

/**
 * The micro-USDC of an amount written as `amount_usdc` is on the wire. Anything else, a JSON
 * number included, is refused with `invalid_input` naming `field` and saying what is wrong.
 */
export function parseUsdc(text: unknown, field = 'amount_usdc'): bigint {
  if (typeof text !== 'string') {
    return thrown(invalidAmount(field, `must be a string (${RULE}), not a ${typeof text}`));
  }
  if (!USDC_PATTERN.test(text)) {
    return thrown(invalidAmount(field, `${JSON.stringify(text)} ${whyNot(text)}: send ${RULE}`));
  }
  const [whole = '0', fraction = ''] = text.split('.');
  const units = BigInt(whole) * UNITS_PER_USDC + BigInt(fraction.padEnd(USDC_DECIMALS, '0'));
  if (units === 0n) {
    return thrown(invalidAmount(field, `${JSON.stringify(text)} is zero: send ${RULE}`));
  }
  return units;
}

function thrown(error: ServiceError): never {
  throw error;
}

/**
 * The written form of `units` micro-USDC: the shortest with at least 2 decimals ("12.50",
 * "0.000001", "1.234567"). Every amount `parseUsdc` takes comes back in this form.
 */
export function formatUsdc(units: bigint): string {
  if (units < 0n) throw new RangeError(`formatUsdc takes no negative amount (${units})`);
  const whole = units / UNITS_PER_USDC;
  const fraction = (units % UNITS_PER_USDC)
    .toString()
    .padStart(USDC_DECIMALS, '0')
    .replace(/0+$/, '')
    .padEnd(2, '0');
  return `${whole}.${fraction}`;
}

/** The `amount_usdc` of an operation's input: checked again, to micro-USDC, by `parseUsdc`. */
export const usdcAmount = z
  .string()
  .regex(POSITIVE_USDC_PATTERN, `an amount is ${RULE}`)
  .describe(
    'The amount in USDC as a decimal string, never a JSON number: digits, optionally a "." and 1 to 6 decimals (USDC has 6); greater than 0 and at most 999999999999.999999; no sign, exponent, whitespace or leading zero. Examples: "12.50", "0.000001", "1000". Not accepted: 12.5 (a number), "012", "+1", "1e3", "1.", ".5", "0", "1.0000001".',
  );
