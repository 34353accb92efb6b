import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { canonicalJson, CanonicalJsonError } from '../../protocol/jcs.ts';

const test = suite('RFC 8785 canonical JSON');

const refused = (error: unknown) => error instanceof CanonicalJsonError;

const fromBits = (hex: string): number => {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
};

test('the RFC 3.2.2 sample comes out as the RFC prints it, byte for byte', () => {
  // The input is the RFC's, parsed from its own JSON text (its escapes included).
  const input = JSON.parse(
    String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`,
  );
  const expected = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;
  assert.is(canonicalJson(input), expected);
  // RFC 8785 3.2.4: the UTF-8 bytes of that output.
  const bytes = `7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72 75 65 2c 66 61 6c 73 65 5d 2c
    22 6e 75 6d 62 65 72 73 22 3a 5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31 65
    2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d 32 37 5d 2c 22 73 74 72 69 6e 67 22 3a 22
    e2 82 ac 24 5c 75 30 30 30 66 5c 6e 41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d`;
  assert.is(Buffer.from(canonicalJson(input), 'utf8').toString('hex'), bytes.replace(/\s+/g, ''));
});

test('members sort by UTF-16 code units as in the RFC 3.2.3 example', () => {
  const input = JSON.parse(
    String.raw`{
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }`,
  );
  // Read the order off the text: a JS object lists the integer-like "1" first whatever came first.
  assert.is(
    canonicalJson(input),
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control",' +
      '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",' +
      '"\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
  );
});

test('numbers match every finite vector of RFC 8785 Appendix B', () => {
  const vectors: [string, string][] = [
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ];
  for (const [bits, expected] of vectors) {
    assert.is(canonicalJson(fromBits(bits)), expected, `0x${bits}`);
  }
});

test('NaN and the infinities (Appendix B) are refused, wherever they sit', () => {
  for (const bits of ['7fffffffffffffff', '7ff0000000000000', 'fff0000000000000']) {
    assert.throws(() => canonicalJson({ a: [fromBits(bits)] }), refused);
  }
});

test('strings escape only quote, backslash and C0 controls, the latter as the RFC says', () => {
  const controls = Array.from({ length: 0x20 }, (_, code) => String.fromCharCode(code)).join('');
  assert.is(
    canonicalJson(controls + '"\\/\u007f\u2028é😀'),
    '"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f' +
      '\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c' +
      '\\u001d\\u001e\\u001f\\"\\\\/\u007f\u2028é😀"',
  );
});

test('what is not I-JSON is refused rather than guessed at', () => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  for (const bad of [
    undefined,
    { a: undefined },
    [undefined],
    10n,
    () => 1,
    Symbol('s'),
    new Date(0),
    new Map(),
    cyclic,
    '\ud800',
    { '\udc00': 1 },
    'a\ud83d',
  ]) {
    assert.throws(() => canonicalJson(bad), refused, String(typeof bad));
  }
  // A value seen twice without a cycle is fine.
  const shared = { x: 1 };
  assert.is(canonicalJson([shared, shared]), '[{"x":1},{"x":1}]');
});

test('objects with a null prototype and JSON.parse-made "__proto__" members are plain JSON', () => {
  const bare = Object.assign(Object.create(null) as object, { b: 1, a: 2 });
  assert.is(canonicalJson(bare), '{"a":2,"b":1}');
  assert.is(
    canonicalJson(JSON.parse('{"__proto__":{"z":1},"a":0}')),
    '{"__proto__":{"z":1},"a":0}',
  );
});

// I-JSON values: strings without lone surrogates, finite numbers.
const jsonValue = fc.jsonValue({ stringUnit: 'binary' });

test('canonical output parses back to the same value', () => {
  fc.assert(
    fc.property(jsonValue, (value) => {
      assert.equal(JSON.parse(canonicalJson(value)), normalise(value));
    }),
    { numRuns: 500 },
  );
});

test('the order members were added in does not change the output', () => {
  fc.assert(
    fc.property(
      fc.dictionary(fc.string({ unit: 'binary' }), jsonValue, { maxKeys: 12 }),
      fc.infiniteStream(fc.nat()),
      (object, draws) => {
        const names = Object.keys(object);
        const order = [...names];
        const it = draws[Symbol.iterator]();
        for (let i = order.length - 1; i > 0; i--) {
          const j = (it.next().value as number) % (i + 1);
          [order[i], order[j]] = [order[j] as string, order[i] as string];
        }
        // fromEntries defines members, so a "__proto__" name stays a member.
        const shuffled = Object.fromEntries(order.map((name) => [name, object[name]]));
        assert.is(canonicalJson(shuffled), canonicalJson(object));
      },
    ),
    { numRuns: 300 },
  );
});

test('canonicalising is idempotent: the canonical text of the parsed output is itself', () => {
  fc.assert(
    fc.property(jsonValue, (value) => {
      const once = canonicalJson(value);
      assert.is(canonicalJson(JSON.parse(once)), once);
    }),
    { numRuns: 300 },
  );
});

/** -0 is written as 0 (RFC 8785), so it parses back as 0. */
function normalise(value: unknown): unknown {
  if (Object.is(value, -0)) return 0;
  if (Array.isArray(value)) return value.map(normalise);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([name, v]) => [name, normalise(v)]));
  }
  return value;
}

test.run();
