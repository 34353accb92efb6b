import { z } from 'zod';
import { defineOperation } from '../operation.ts';
import { SIGNATURE_WINDOW_SECONDS } from '../message-signature.ts';

export { SIGNATURE_WINDOW_SECONDS };

/** Live signing keys one agent may hold at once. */
export const MAX_KEYS_PER_AGENT = 10;
/**
 * An RFC 7638 thumbprint of an Ed25519 JWK: the base64url SHA-256 of its required members
 * (`{"crv":"Ed25519","kty":"OKP","x":...}`), 43 characters.
 */
const keyIdSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/,
    'a key id is the RFC 7638 thumbprint: 32 bytes in base64url (43 characters)',
  )
  .describe(
    'The key\u2019s RFC 7638 JWK thumbprint (base64url, 43 characters): `keyid` in signatures.',
  );

const publicJwk = z
  .strictObject({
    kty: z.literal('OKP').describe('`OKP`: an octet key pair (RFC 8037).'),
    crv: z.literal('Ed25519').describe('`Ed25519`: the only curve taken.'),
    x: z
      .string()
      .regex(
        /^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/,
        'x is the 32-byte public key in base64url, no padding (43 characters)',
      )
      .describe('The public key: 32 bytes, base64url without padding.'),
    kid: z.string().max(128).optional().describe('Ignored: the key id is the thumbprint.'),
    alg: z
      .string()
      .max(32)
      .optional()
      .describe('Ignored when given; signatures say `alg="ed25519"`.'),
    use: z.string().max(16).optional().describe('Ignored.'),
  })
  .describe('A public Ed25519 key as a JWK (RFC 8037). Never send the private part (`d`).');

const keyName = z
  .string()
  .min(1, 'name must not be empty')
  .max(64, 'name must be at most 64 characters')
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  .regex(/^[^\x00-\x1f\x7f]*$/, 'name must be one line without control characters')
  .describe('What the key is for, in your words (1 to 64 characters): shown by list_keys.');

const keyInfo = z
  .object({
    key_id: keyIdSchema,
    name: z.string().nullable(),
    created_at: z.iso.datetime(),
    last_used_at: z.iso
      .datetime()
      .nullable()
      .describe('To the minute: a key used again within a minute is not written down again.'),
  })
  .meta({ id: 'SigningKey' });

const signatureDocs =
  'Sign each request per RFC 9421 (`Signature-Input`, `Signature`) with `alg="ed25519"`, `keyid="<key_id>"` and `created`, covering `@method`, `@authority`, `@path`, `@query` when there is a query, `authorization` when sent, and `content-digest` (RFC 9530, `sha-256`) when there is a body; /protocol#signed-requests has a signer for Node and one for Python.';

const addKey = defineOperation({
  name: 'add_key',
  method: 'POST',
  path: '/whoami/keys',
  auth: 'agent',
  tokenScope: 'any-workspace',
  status: 201,
  binds: true,
  maxBodyBytes: 2048,
  summary: 'Add an Ed25519 public key with which you sign requests (RFC 9421).',
  description: [
    'Adds a public Ed25519 key (a JWK: `{kty: "OKP", crv: "Ed25519", x}`) to your agent. Its',
    '`key_id` is its RFC 7638 thumbprint, the `keyid` your signatures name. A request signed by',
    'a live key of yours is yours: it needs no bearer token, and one sent with it must be yours.',
    signatureDocs,
    `You hold at most ${MAX_KEYS_PER_AGENT} live keys (\`409 limit_reached\`); a key live already`,
    'here, yours or another agent\u2019s, is refused (`409 key_exists`). Adding a key is a write: under',
    '`require_signature` it must be signed by a live key (or sent by mail and confirmed).',
  ].join(' '),
  input: z.strictObject({ jwk: publicJwk, name: keyName.optional() }),
  output: z
    .object({ key_id: keyIdSchema, name: z.string().nullable(), created_at: z.iso.datetime() })
    .meta({ id: 'NewSigningKey' }),
  errors: ['limit_reached', 'key_exists'],
});

const listKeys = defineOperation({
  name: 'list_keys',
  method: 'GET',
  path: '/whoami/keys',
  auth: 'agent',
  tokenScope: 'any-workspace',
  readOnly: true,
  status: 200,
  summary: 'Your live signing keys: ids, names, when added and last used.',
  description: [
    'Lists your live signing keys (revoked ones are left out), oldest first, with when each was',
    'last used to sign, so that one you do not recognise can be revoked.',
  ].join(' '),
  input: z.strictObject({}),
  output: z
    .object({
      keys: z.array(keyInfo),
      require_signature: z
        .boolean()
        .describe('Whether writes need a signature (set_signature_policy).'),
    })
    .meta({ id: 'SigningKeyList' }),
  errors: [],
});

const revokeKey = defineOperation({
  name: 'revoke_key',
  method: 'DELETE',
  path: '/whoami/keys/:key_id',
  auth: 'agent',
  tokenScope: 'any-workspace',
  status: 200,
  binds: true,
  summary: 'Revoke one of your signing keys: signatures by it are refused at once, everywhere.',
  description: [
    'Revokes a signing key of yours by its `key_id`: from then on a request signed by it is',
    'refused (`401 invalid_signature`, `reason: "key_revoked"`) at every door and in every',
    'process. A key not yours or revoked already answers `404`. Under `require_signature` your',
    'last live key cannot be revoked (`409 last_key`): add another first, or turn the policy off.',
  ].join(' '),
  input: z.strictObject({ key_id: keyIdSchema }),
  output: z
    .object({ key_id: keyIdSchema, revoked: z.literal(true) })
    .meta({ id: 'RevokedSigningKey' }),
  errors: ['not_found', 'last_key'],
});

const setSignaturePolicy = defineOperation({
  name: 'set_signature_policy',
  method: 'PUT',
  path: '/whoami/signature-policy',
  auth: 'agent',
  tokenScope: 'any-workspace',
  status: 200,
  binds: true,
  maxBodyBytes: 1024,
  summary: 'Require a signature by one of your keys for every request that changes anything.',
  description: [
    '`require_signature: true`: from then on a request that changes state and carries no valid',
    'signature by a live key of yours is refused with `401 signature_required`, at every door:',
    'HTTP, MCP, socket.io (an unsigned connection only reads; its `ack` is refused) and storage',
    'links (minted only by signed requests). Reads need no signature. A stolen bearer token alone',
    'then cannot write. Needs a live key first (`409 last_key`). Turning it off is a write too:',
    'sign it, or send it by mail and confirm (the way back in when every key is lost).',
  ].join(' '),
  input: z.strictObject({
    require_signature: z.boolean().describe('True: writes need a signature by a live key.'),
  }),
  output: z.object({ require_signature: z.boolean() }).meta({ id: 'SignaturePolicy' }),
  errors: ['last_key'],
});

export const KEY_OPERATIONS = {
  add_key: addKey,
  list_keys: listKeys,
  revoke_key: revokeKey,
  set_signature_policy: setSignaturePolicy,
} as const;
