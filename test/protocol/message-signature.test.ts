import { verify } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { publicKeyOf } from '../../actors/kernel/request-signatures.ts';
import { signatureClaims, type SignedMessage } from '../../protocol/message-signature.ts';
import { ServiceError } from '../../protocol/errors.ts';

const test = suite('RFC 9421: signature bases rebuilt as the RFC shows them');

/** RFC 9421 appendix B.2's test request, as the HTTP door hands it over. */
const B2_REQUEST: SignedMessage = {
  method: 'POST',
  authority: 'example.com',
  path: '/foo',
  query: 'param=Value&Pet=dog',
  headers: {
    host: 'example.com',
    date: 'Tue, 20 Apr 2021 02:07:55 GMT',
    'content-type': 'application/json',
    'content-digest':
      'sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:',
    'content-length': '18',
  },
};

/** B.1.4's test-key-ed25519, its public half as a JWK's `x`. */
const TEST_KEY_ED25519_X = 'JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs';

const scheme = () => 'https';

test('B.2.6 (ed25519): the base is the RFC\u2019s, byte for byte, and its signature verifies', () => {
  const claims = signatureClaims(
    {
      ...B2_REQUEST,
      headers: {
        ...B2_REQUEST.headers,
        'signature-input':
          'sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"',
        signature:
          'sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:',
      },
    },
    scheme,
  );
  assert.ok(claims);
  const [claim] = claims;
  assert.ok(claim);
  assert.is(claim.keyId, 'test-key-ed25519');
  assert.is(claim.created, 1618884473);
  const base = claim.base();
  assert.is(
    base,
    [
      '"date": Tue, 20 Apr 2021 02:07:55 GMT',
      '"@method": POST',
      '"@path": /foo',
      '"@authority": example.com',
      '"content-type": application/json',
      '"content-length": 18',
      '"@signature-params": ("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"',
    ].join('\n'),
  );
  const key = publicKeyOf(Buffer.from(TEST_KEY_ED25519_X, 'base64url'));
  assert.ok(verify(null, Buffer.from(base), key, claim.signature as Uint8Array));
  // One byte of the base changed: the RFC's signature no longer holds.
  assert.not.ok(
    verify(null, Buffer.from(base.replace('POST', 'PUT ')), key, claim.signature as Uint8Array),
  );
});

test('derived components: @query, @request-target, @target-uri and @scheme', () => {
  const claims = signatureClaims(
    {
      ...B2_REQUEST,
      headers: {
        ...B2_REQUEST.headers,
        'signature-input':
          'sig1=("@query" "@request-target" "@target-uri" "@scheme");created=1;keyid="k"',
        signature: 'sig1=:AAAA:',
      },
    },
    scheme,
  );
  const base = claims?.[0]?.base();
  assert.is(
    base,
    [
      '"@query": ?param=Value&Pet=dog',
      '"@request-target": /foo?param=Value&Pet=dog',
      '"@target-uri": https://example.com/foo?param=Value&Pet=dog',
      '"@scheme": https',
      '"@signature-params": ("@query" "@request-target" "@target-uri" "@scheme");created=1;keyid="k"',
    ].join('\n'),
  );
});

function refusal(input: string, signature = 'sig1=:AAAA:'): string {
  try {
    const claims = signatureClaims(
      { ...B2_REQUEST, headers: { ...B2_REQUEST.headers, 'signature-input': input, signature } },
      scheme,
    );
    claims?.[0]?.base();
  } catch (error) {
    assert.instance(error, ServiceError);
    assert.is((error as ServiceError).code, 'invalid_signature');
    return String((error as ServiceError).extra.reason);
  }
  return 'accepted';
}

test('what a base cannot be built from is refused with its reason', () => {
  assert.is(refusal('sig1=("@method"'), 'malformed');
  assert.is(refusal('sig1="@method"'), 'malformed');
  assert.is(refusal('sig1=("x-absent");created=1'), 'component');
  assert.is(refusal('sig1=("@method" "@method");created=1'), 'component');
  assert.is(refusal('sig1=("content-type";sf);created=1'), 'component');
  assert.is(refusal('sig1=("@status");created=1'), 'component');
  assert.is(refusal('sig1=("Content-Type");created=1'), 'component');
  assert.is(refusal('sig1=("@method");created=1', 'not a dictionary ('), 'malformed');
  const crowd = Array.from({ length: 9 }, (_, i) => `s${i}=("@method");keyid="k${i}"`).join(', ');
  assert.is(refusal(crowd), 'malformed', 'at most 8 signatures are read');
});

test.run();
