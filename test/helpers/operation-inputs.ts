import { randomUUID } from 'node:crypto';
import { toJsonSchema, type JsonSchema } from '../../protocol/json-schema.ts';
import { restParameter, type Operation } from '../../protocol/operation.ts';

/**
 * Inputs an operation's schema takes, made from the operation table: the base a test changes one
 * field of (hostile input, forged mail), so that whatever it is answered is about that field.
 */

/** Fields whose form a schema's type alone does not say, by name: values they take. */
const FIELD_VALUES: Record<string, unknown> = {
  url: 'https://example.org/hook',
  email: 'someone@example.org',
  address: `0x${'a'.repeat(40)}`,
  signature: `0x${'a'.repeat(130)}`,
  amount_usdc: '1',
  tx_hash: `0x${'a'.repeat(64)}`,
  code: '123456',
};

/** A value `schema` takes (an object's required fields only). */
export function validValue(schema: JsonSchema): unknown {
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  switch (schema.type) {
    case 'string':
      if (schema.format === 'uuid') return randomUUID();
      if (schema.format === 'email') return 'someone@example.org';
      if (schema.format === 'uri') return 'https://example.org/';
      if (schema.pattern === '^[0-9a-f]{64}$') return 'a'.repeat(64);
      // 32 bytes in base64url: an Ed25519 public key's `x`, a key id (an RFC 7638 thumbprint).
      if (schema.pattern === '^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$') return 'A'.repeat(43);
      return 'abc';
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1;
    case 'boolean':
      return true;
    case 'array':
      return Array.from({ length: Number(schema.minItems ?? 0) }, () =>
        validValue(schema.items as JsonSchema),
      );
    case 'object':
      return Object.fromEntries(
        ((schema.required ?? []) as string[]).map((key) => [
          key,
          FIELD_VALUES[key] ??
            validValue((schema.properties as Record<string, JsonSchema>)[key] as JsonSchema),
        ]),
      );
    default:
      return 'abc';
  }
}

/** The required fields of an operation with values its schema takes; a file path is `a.md`. */
export function validInput(operation: Operation): Record<string, unknown> {
  const input = validValue(toJsonSchema(operation.input, 'input')) as Record<string, unknown>;
  const rest = restParameter(operation.path);
  if (rest !== undefined) input[rest] = 'a.md';
  return input;
}
