import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ServiceError } from '../../protocol/errors.ts';
import {
  MAX_USDC_UNITS,
  formatUsdc,
  parseUsdc,
  usdcAmount,
} from '../../protocol/payments/money.ts';

const test = suite('USDC amounts');

/** The refusal `parseUsdc` throws for `value`, or a failure when it takes it. */
function refusal(value: unknown, field?: string): ServiceError {
  try {
    parseUsdc(value, field);
  } catch (error) {
    assert.instance(error, ServiceError);
    return error as ServiceError;
  }
  assert.unreachable(`${JSON.stringify(value)} was taken`);
  throw new Error('unreachable');
}

test('a decimal string becomes integer micro-USDC', () => {
  const cases: [string, bigint][] = [
    ['12.50', 12_500_000n],
    ['12.5', 12_500_000n],
    ['12', 12_000_000n],
    ['0.000001', 1n],
    ['0.1', 100_000n],
    ['1.234567', 1_234_567n],
    ['1000', 1_000_000_000n],
    ['999999999999.999999', MAX_USDC_UNITS],
    ['0.10', 100_000n],
    ['1.000000', 1_000_000n],
  ];
  for (const [text, units] of cases) assert.is(parseUsdc(text), units, text);
});

test('the largest amount is 999,999,999,999.999999 USDC', () => {
  assert.is(MAX_USDC_UNITS, 999_999_999_999_999_999n);
});

test('each malformed amount is refused with invalid_input naming the field and what is wrong', () => {
  const cases: [string, RegExp][] = [
    ['', /is empty/],
    [' 12', /whitespace/],
    ['12 ', /whitespace/],
    ['1\u00a02', /whitespace/],
    ['12\n', /whitespace/],
    ['+1', /sign/],
    ['-1', /sign/],
    ['-0.5', /sign/],
    ['1e3', /exponent/],
    ['1E3', /exponent/],
    ['012', /leading zero/],
    ['00.5', /leading zero/],
    ['00', /leading zero/],
    ['1.', /ends with "\."/],
    ['.5', /no digit before/],
    ['.', /no digit before/],
    ['1.2.3', /more than one "\."/],
    ['1.0000001', /7 decimals/],
    ['0.0000001', /7 decimals/],
    ['1000000000000', /larger than 999999999999\.999999/],
    ['1000000000000.5', /larger than/],
    ['١٢', /ASCII digits/],
    ['１２', /ASCII digits/],
    ['0x10', /ASCII digits/],
    ['12,50', /ASCII digits/],
    ['NaN', /ASCII digits/],
    ['Infinity', /ASCII digits/],
    ['1_000', /ASCII digits/],
  ];
  for (const [text, why] of cases) {
    const error = refusal(text);
    assert.is(error.code, 'invalid_input', text);
    assert.is(error.status, 400, text);
    assert.is(error.extra.field, 'amount_usdc', text);
    assert.match(error.message, why, `${JSON.stringify(text)}: ${error.message}`);
    assert.match(error.message, /^amount_usdc: /);
    assert.match(error.message, /"12\.50"/, 'the refusal shows a good example');
    assert.equal(error.extra.issues, [
      { field: 'amount_usdc', message: error.message.slice('amount_usdc: '.length, -1) },
    ]);
  }
});

test('zero, in every written form, is refused as zero', () => {
  for (const text of ['0', '0.0', '0.00', '0.000000']) {
    assert.match(refusal(text).message, /is zero/, text);
  }
});

test('a JSON number, even a whole one, is refused: amounts are strings', () => {
  for (const value of [12.5, 12, 0.1, 1e3, Number.NaN, 12_500_000n, null, undefined, ['1'], {}]) {
    const error = refusal(value);
    assert.is(error.code, 'invalid_input');
    assert.match(error.message, /must be a string/);
  }
});

test('the refusal names the field it is given', () => {
  const error = refusal('1.', 'amount');
  assert.is(error.extra.field, 'amount');
  assert.match(error.message, /^amount: "1\." ends with/);
});

test('an amount is written with at least 2 decimals, at most 6, and no trailing zero past 2', () => {
  const cases: [bigint, string][] = [
    [12_500_000n, '12.50'],
    [12_000_000n, '12.00'],
    [1n, '0.000001'],
    [10n, '0.00001'],
    [100_000n, '0.10'],
    [1_234_567n, '1.234567'],
    [1_234_500n, '1.2345'],
    [1_000_000_000n, '1000.00'],
    [MAX_USDC_UNITS, '999999999999.999999'],
    [0n, '0.00'],
  ];
  for (const [units, text] of cases) assert.is(formatUsdc(units), text, String(units));
});

test('a negative amount cannot be written', () => {
  assert.throws(() => formatUsdc(-1n), RangeError);
});

const units = fc.bigInt({ min: 1n, max: MAX_USDC_UNITS });

/** Any amount `parseUsdc` takes, in any of its accepted forms (trailing zeros, no decimals). */
const written = fc
  .record({
    whole: fc.oneof(fc.constant(0n), fc.bigInt({ min: 1n, max: 999_999_999_999n })),
    decimals: fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 0, maxLength: 6 }),
  })
  .filter(({ whole, decimals }) => whole > 0n || /[1-9]/.test(decimals))
  .map(({ whole, decimals }) => (decimals === '' ? `${whole}` : `${whole}.${decimals}`));

test('every amount comes back from its written form: parse(format(n)) is n', () => {
  fc.assert(fc.property(units, (n) => parseUsdc(formatUsdc(n)) === n));
});

test('every accepted text has one canonical form, of the same amount, that format gives back', () => {
  fc.assert(
    fc.property(written, (text) => {
      const canonical = formatUsdc(parseUsdc(text));
      assert.is(parseUsdc(canonical), parseUsdc(text));
      assert.is(formatUsdc(parseUsdc(canonical)), canonical);
      assert.match(canonical, /^(0|[1-9][0-9]*)\.[0-9]{2}([0-9]{0,4})$/);
      assert.not.match(canonical, /\.[0-9]{2}[0-9]*0$/, 'no trailing zero past 2 decimals');
    }),
  );
});

test('the zod schema takes exactly what parseUsdc takes', () => {
  const near = fc.string({ unit: fc.constantFrom(...'0123456789.+-eE ٣'), maxLength: 16 });
  fc.assert(
    fc.property(fc.oneof(near, written), (text) => {
      let parsed = true;
      try {
        parseUsdc(text);
      } catch {
        parsed = false;
      }
      assert.is(usdcAmount.safeParse(text).success, parsed, JSON.stringify(text));
    }),
  );
  assert.is(usdcAmount.safeParse(12.5).success, false);
  assert.is(usdcAmount.safeParse('0.00').success, false);
});

test("the schema's description states the rule with examples", () => {
  const description = usdcAmount.description ?? '';
  for (const words of ['decimal string', 'never a JSON number', '6 decimals', '"12.50"', '"1e3"']) {
    assert.ok(description.includes(words), words);
  }
});

test.run();
