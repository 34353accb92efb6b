import { z } from 'zod';

/** The longest address SMTP carries (RFC 5321's path limit less its angle brackets). */
export const MAX_EMAIL_ADDRESS_LENGTH = 254;

/** The longest local part (before `@`) RFC 5321 allows. */
const MAX_LOCAL_PART_LENGTH = 64;

// Whitespace (CR and LF among it), NUL and the characters that end or split an address in a
// header (`<>()[],;:"\`): an address holding one could add a header or a second recipient.
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const HEADER_BREAKING = /[\s\u0000-\u001f\u007f<>()[\],;:"\\]/;

// RFC 5322 dot-atom: the unquoted local parts people use; quoted local parts are refused.
const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;

// A host name of at least two labels (letters, digits, inner hyphens, 1 to 63 each), the last
// not all digits; an international domain is written in its `xn--` form.
const DOMAIN =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+(?:[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?|xn--[A-Za-z0-9-]{1,59})$/;

/**
 * The rules of emailAddressProblem as one regular expression, for the OpenAPI description's
 * `pattern`: a client can check an address before it sends it. All but one: the local part's 64
 * characters, which would need a lookahead that generators of test data (Hypothesis, so
 * Schemathesis) cannot satisfy; the description says that bound in words. The two agree on
 * every other address (test/protocol/openapi-validation-rules.test.ts).
 */
export const EMAIL_ADDRESS_PATTERN = new RegExp(
  `^${LOCAL_PART.source.slice(1, -1)}@${DOMAIN.source.slice(1, -1)}$`,
);

/**
 * What is wrong with an email address, said so that an agent can fix it; null when nothing is.
 * Every address the service takes as input (notification email, invites, the mail door's
 * senders) passes this one check.
 */
export function emailAddressProblem(address: string): string | null {
  if (address.length === 0) return 'email must not be empty.';
  if (address.length > MAX_EMAIL_ADDRESS_LENGTH) {
    return `email must be at most ${MAX_EMAIL_ADDRESS_LENGTH} characters.`;
  }
  if (HEADER_BREAKING.test(address)) {
    return 'email must not hold spaces, line breaks, control characters or any of < > ( ) [ ] , ; : " \\.';
  }
  const at = address.lastIndexOf('@');
  if (at <= 0 || address.indexOf('@') !== at) {
    return 'email must be one address of the form local@domain (exactly one @).';
  }
  const local = address.slice(0, at);
  const domain = address.slice(at + 1);
  if (local.length > MAX_LOCAL_PART_LENGTH) {
    return `email: the part before @ must be at most ${MAX_LOCAL_PART_LENGTH} characters.`;
  }
  if (!LOCAL_PART.test(local)) {
    return "email: the part before @ may hold ASCII letters, digits and !#$%&'*+/=?^_`{|}~- with single dots between them.";
  }
  if (!DOMAIN.test(domain)) {
    return 'email: the domain must be a host name with a dot (letters, digits, inner hyphens; an international domain in its xn-- form).';
  }
  return null;
}

/**
 * An email address as input: `local@domain`, checked by emailAddressProblem (400 `invalid_input`
 * names what to fix), then lower-cased whole, so that one address is one key everywhere.
 */
export const emailAddress = z
  .string()
  .max(MAX_EMAIL_ADDRESS_LENGTH, `email must be at most ${MAX_EMAIL_ADDRESS_LENGTH} characters`)
  .superRefine((value, ctx) => {
    const problem = emailAddressProblem(value);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
  })
  // The same rules for the description (superRefine, above, names what to fix).
  .regex(EMAIL_ADDRESS_PATTERN, { abort: true, message: 'email is not an address local@domain' })
  .toLowerCase()
  .describe(
    `An email address, local@domain, at most ${MAX_EMAIL_ADDRESS_LENGTH} characters and at most ${MAX_LOCAL_PART_LENGTH} before the @, ASCII (an international domain in its xn-- form); compared and kept lower-cased.`,
  );
