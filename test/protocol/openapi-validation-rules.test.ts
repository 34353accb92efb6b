import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { emailAddress, emailAddressProblem } from '../../protocol/email/address.ts';
import { toJsonSchema, type JsonSchema } from '../../protocol/json-schema.ts';
import { parseUsdc, usdcAmount } from '../../protocol/payments/money.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { WEBHOOK_URL_PATTERN } from '../../protocol/webhooks.ts';

/**
 * The description says what validation refuses (issue 35 §1): a rule written as a zod
 * refinement is invisible to /openapi.json, so every operation's input is walked for one, and
 * each rule that now travels as a `pattern` is held to the code that refuses.
 */
const test = suite('what the description says each input takes');

/** Where in a zod schema a refinement (`refine`, `superRefine`) sits, by field path. */
function refinements(schema: unknown, at: string, found: string[], seen = new Set()): void {
  const zod = (schema as { _zod?: { def: Record<string, unknown> } } | null)?._zod;
  if (!zod || seen.has(schema)) return;
  seen.add(schema);
  const def = zod.def;
  const checks = (def.checks ?? []) as { _zod: { def: { check: string } } }[];
  if (checks.some((check) => check._zod.def.check === 'custom')) found.push(at);
  for (const [key, value] of Object.entries(def)) {
    if (key === 'checks' || value === null || typeof value !== 'object') continue;
    if (key === 'shape') {
      for (const [name, field] of Object.entries(value))
        refinements(field, `${at}.${name}`, found, seen);
    } else if (Array.isArray(value)) {
      value.forEach((item, index) => refinements(item, `${at}.${key}${index}`, found, seen));
    } else refinements(value, at, found, seen);
  }
}

/**
 * Refinements that stay, each beside a `pattern` that says the same rule (the refinement only
 * names what to fix, field by field); each agreement is proved below.
 */
const SAID_BY_A_PATTERN = new Set([
  'invite_by_email.email',
  'set_notification_email.email',
  // `uniqueItems` and `maxContains` over the workspace scopes.
  'create_token.scopes',
]);

test('no described operation refuses by a rule its description cannot show', () => {
  const hidden: string[] = [];
  for (const operation of OPERATION_LIST) {
    // The operator's own operations are not in /openapi.json.
    if (operation.operatorOnly) continue;
    const found: string[] = [];
    refinements(operation.input, operation.name, found);
    hidden.push(...found.filter((at) => !SAID_BY_A_PATTERN.has(at)));
  }
  assert.equal(hidden, []);
});

/** The described schema of one zod string schema. */
function described(schema: z.ZodType): JsonSchema {
  const properties = toJsonSchema(z.object({ value: schema }), 'input').properties;
  return (properties as Record<string, JsonSchema>).value as JsonSchema;
}

function fitsDescription(schema: JsonSchema, text: string): boolean {
  return (
    new RegExp(schema.pattern as string).test(text) &&
    text.length <= ((schema.maxLength as number | undefined) ?? Infinity) &&
    text.length >= ((schema.minLength as number | undefined) ?? 0)
  );
}

test("an amount's described pattern takes exactly what parseUsdc takes, zero refused", () => {
  const schema = described(usdcAmount);
  const near = fc.string({ unit: fc.constantFrom(...'0123456789.'), maxLength: 16 });
  fc.assert(
    fc.property(near, (text) => {
      let parsed = true;
      try {
        parseUsdc(text);
      } catch {
        parsed = false;
      }
      assert.is(fitsDescription(schema, text), parsed, JSON.stringify(text));
    }),
  );
  for (const zero of ['0', '0.0', '0.000000']) assert.not.ok(fitsDescription(schema, zero), zero);
});

test("an email address's described pattern takes exactly what emailAddressProblem takes", () => {
  const schema = described(emailAddress);
  const unit = fc.constantFrom(...'ab.-@_+ "<>X9\u00e9\n'.split(''));
  const near = fc.string({ unit, maxLength: 24 });
  const likely = fc
    .tuple(fc.stringMatching(/^[a-z.+_-]{0,70}$/), fc.stringMatching(/^[a-z0-9.-]{0,20}$/))
    .map(([local, domain]) => `${local}@${domain}`);
  fc.assert(
    fc.property(fc.oneof(near, likely), (text) => {
      // The local part's bound is said in words only (protocol/email/address.ts).
      if (text.indexOf('@') > 64) return;
      assert.is(fitsDescription(schema, text), emailAddressProblem(text) === null, text);
    }),
    { numRuns: 5000 },
  );
  for (const bad of ['', '@', 'a@b', 'a..b@example.com']) {
    assert.not.ok(fitsDescription(schema, bad), bad);
    assert.ok(emailAddressProblem(bad), bad);
  }
  assert.ok(fitsDescription(schema, `${'a'.repeat(64)}@example.com`));
  assert.match(String(schema.description), /at most 64 before the @/);
});

test("create_token's described scopes take exactly the lists its input takes", () => {
  const input = OPERATION_LIST.find((operation) => operation.name === 'create_token')?.input;
  assert.ok(input);
  const properties = toJsonSchema(input, 'input').properties as Record<string, JsonSchema>;
  const validate = new Ajv2020({ strict: false }).compile(properties.scopes as JsonSchema);
  const scope = fc.constantFrom(
    'read',
    'workspace:00000000-0000-4000-8000-000000000001',
    'workspace:00000000-0000-4000-8000-000000000002',
  );
  fc.assert(
    fc.property(fc.array(scope, { maxLength: 3 }), (scopes) => {
      const taken = input.safeParse({ name: 'n', scopes }).success;
      assert.is(validate(scopes), taken, JSON.stringify(scopes));
    }),
    { numRuns: 500 },
  );
});

test('every webhook URL the described pattern takes is one the URL parser takes as a webhook', () => {
  // fast-check generates no lookahead: generate without it, keep what the whole pattern takes.
  const generator = new RegExp(WEBHOOK_URL_PATTERN.source.replaceAll('(?![A-Za-z0-9]{2}--)', ''));
  fc.assert(
    fc.property(
      fc.stringMatching(generator).filter((text) => WEBHOOK_URL_PATTERN.test(text)),
      (text) => {
        const url = new URL(text);
        assert.ok(['http:', 'https:'].includes(url.protocol), text);
        assert.is(url.username + url.password + url.hash, '', text);
      },
    ),
    { numRuns: 5000 },
  );
  // `xN--0` is no punycode: the URL parser throws on it, so the pattern refuses `--` there.
  for (const bad of [
    '',
    'ftp://example.com/',
    'https://user:pw@example.com/',
    'https://a.b/#x',
    'http://xN--0.a',
    'https://a.b:65536/',
  ]) {
    assert.not.ok(WEBHOOK_URL_PATTERN.test(bad), bad);
  }
});

test('every string an operation takes is described without NUL, which every door refuses', () => {
  const open: string[] = [];
  const walk = (node: unknown, at: string): void => {
    if (node === null || typeof node !== 'object') return;
    const schema = node as JsonSchema;
    // A rule only JavaScript's patterns can say is stated in words (protocol/json-schema.ts).
    const inWords = String(schema.description).includes('The service checks this rule itself');
    if (schema.type === 'string' && !('enum' in schema) && !('const' in schema) && !inWords) {
      const pattern = schema.pattern as string | undefined;
      const takesNul =
        pattern === undefined
          ? !('format' in schema)
          : ['\u0000', 'a\u0000b', '0\u00000'].some((text) => new RegExp(pattern, 'u').test(text));
      if (takesNul) open.push(at);
    }
    for (const [key, value] of Object.entries(schema)) walk(value, `${at}/${key}`);
  };
  for (const operation of OPERATION_LIST)
    walk(toJsonSchema(operation.input, 'input'), operation.name);
  assert.equal(open, []);
});

test('a rule against control characters (`\\p{Cc}`) stays in the description, spelt as ranges', () => {
  const zod = z.string().regex(/^[^\p{Cc}]*$/u);
  const pattern = new RegExp(described(zod).pattern as string, 'u');
  for (let code = 0; code <= 0x3000; code++) {
    const text = `a${String.fromCodePoint(code)}b`;
    assert.is(pattern.test(text), zod.safeParse(text).success, `U+${code.toString(16)}`);
  }
});

test.run();
