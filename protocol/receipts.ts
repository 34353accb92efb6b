import { z } from 'zod';
import { defineOperation } from './operation.ts';

/**
 * The receipts the service signs, declared once: a file's save or delete, a deal's agreement,
 * delivery or rating, a payment's request or off-chain confirmation. Each is chained in its
 * workspace (`prev_hash`) and signed (`kid`, `signature`); the capabilities that make them
 * (files, deals, payments) embed these schemas in their answers.
 */

/** The signing key's id, as /.well-known/service-keys.json lists it. */
const kid = z
  .string()
  .describe('The signing key; its public half is at /.well-known/service-keys.json.');
const prevHash = z
  .string()
  .nullable()
  .describe(
    "Hex SHA-256 of the canonical JSON of the workspace's previous receipt; null for its first.",
  );
const signature = z
  .string()
  .describe(
    'Ed25519 over the RFC 8785 canonical JSON of this receipt without `signature`, base64url.',
  );

/** A file's save or delete. */
export const fileReceiptSchema = z
  .object({
    receipt_id: z.uuid(),
    workspace_id: z.uuid(),
    path: z.string(),
    action: z.enum(['save', 'delete']),
    version: z.int().positive(),
    size: z.int().nonnegative(),
    sha256: z.string(),
    agent_id: z.uuid(),
    agent_name: z.string(),
    saved_at: z.iso.datetime(),
    kid,
    prev_hash: prevHash,
    signature,
  })
  .meta({ id: 'Receipt' });

/** The receipt of a deal's agreement, delivery or rating (/deals/protocol). */
export const dealReceiptSchema = z
  .looseObject({
    receipt_id: z.uuid(),
    workspace_id: z.uuid(),
    action: z.enum(['agree', 'deliver', 'rate']),
    deal_id: z.uuid(),
    at: z.iso.datetime(),
    kid: z.string(),
    prev_hash: z.string().nullable(),
    signature: z.string(),
  })
  .describe('A deal receipt; its other members depend on `action` (see /deals/protocol).')
  .meta({ id: 'DealReceipt' });

export type DealReceipt = z.infer<typeof dealReceiptSchema>;

/** The receipt of a payment's request, its final transfer, or an off-chain confirmation (/pay/protocol). */
export const paymentReceiptSchema = z
  .looseObject({
    receipt_id: z.uuid(),
    workspace_id: z.uuid(),
    action: z.enum(['payment_requested', 'payment_final', 'offchain_payment_confirmed']),
    deal_id: z.uuid(),
    at: z.iso.datetime(),
    kid,
    prev_hash: prevHash,
    signature,
  })
  .describe('A payment receipt; its other members depend on `action` (see /pay/protocol).')
  .meta({ id: 'PaymentReceipt' });

/**
 * A receipt of any kind as an answer embeds it (an agreement's, a payment's): its members by
 * kind are the schemas above and the layer protocols; each use says where it is chained.
 */
export const signedReceipt = z.record(z.string(), z.unknown());

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
