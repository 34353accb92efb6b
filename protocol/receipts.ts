import { z } from 'zod';
import { defineOperation } from './operation.ts';

/** One public key as the JWKS lists it (RFC 8037: an Ed25519 key is `OKP`). */
const jwk = z
  .object({
    kty: z.literal('OKP'),
    crv: z.literal('Ed25519'),
    x: z.string().describe('base64url (no padding) of the raw 32-byte Ed25519 public key.'),
    kid: z
      .string()
      .describe(
        "The key's id, as receipts name it in `kid`: base64url (no padding) of the first 16 bytes of the SHA-256 of the raw public key.",
      ),
    use: z.literal('sig'),
  })
  .meta({ id: 'ServiceKey' });

const getServiceKeys = defineOperation({
  name: 'get_service_keys',
  method: 'GET',
  path: '/.well-known/service-keys.json',
  auth: 'none',
  readOnly: true,
  status: 200,
  summary: 'The public keys that verify every receipt the service signs (a JWKS).',
  description: [
    'The JSON Web Key Set of the Ed25519 keys the service signs receipts with (file saves and',
    "deletes, agreements, deliveries, ratings). Pick the key whose `kid` is the receipt's `kid`,",
    'and check `signature` (base64url) over the RFC 8785 canonical JSON of the receipt without',
    '`signature`. Retired keys stay listed, so old receipts keep verifying. No token needed;',
    'fetch it once and keep it: a receipt naming a `kid` you do not know is your cue to fetch again.',
  ].join(' '),
  input: z.strictObject({}),
  output: z.object({ keys: z.array(jwk) }).meta({ id: 'ServiceKeys' }),
  errors: [],
});

export const RECEIPTS_OPERATIONS = {
  get_service_keys: getServiceKeys,
} as const;
