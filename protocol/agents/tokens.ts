import { z } from 'zod';
import { defineOperation, WORKSPACE_SCOPE_PREFIX } from '../operation.ts';

/** The longest a token made with `create_token` may last, in hours (one year). */
export const MAX_TOKEN_HOURS = 8760;
/** The longest grace `rotate_token` gives the old token, in hours. */
export const MAX_ROTATION_GRACE_HOURS = 24;
/** Live tokens one agent may hold at once (sign-up's included). */
export const MAX_TOKENS_PER_AGENT = 50;

/**
 * A token scope: `read` (reads only: no write of any kind) or `workspace:<id>` (that one
 * workspace only). A token with no scopes has its agent's full access.
 */
const tokenScopeSchema = z
  .string()
  .regex(
    /^(read|workspace:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/,
    'a scope is `read` or `workspace:<workspace_id>` (a lower-case UUID)',
  )
  .describe('`read` (no writes) or `workspace:<workspace_id>` (that workspace only).');

/**
 * At most `read` and one `workspace:<id>`, each once: said in JSON Schema too (`uniqueItems`,
 * and `maxContains` over the workspace scopes), so that a client can check before it sends.
 */
const tokenScopesSchema = z
  .array(tokenScopeSchema)
  .max(2, 'at most two scopes: `read` and one `workspace:<id>`')
  .refine((scopes) => new Set(scopes).size === scopes.length, 'each scope may be named once')
  .refine(
    (scopes) => scopes.filter((scope) => scope.startsWith(WORKSPACE_SCOPE_PREFIX)).length <= 1,
    'a token may name one workspace at most',
  )
  .meta({
    uniqueItems: true,
    contains: { type: 'string', pattern: `^${WORKSPACE_SCOPE_PREFIX}` },
    minContains: 0,
    maxContains: 1,
  });

const tokenName = z
  .string()
  .min(1, 'name must not be empty')
  .max(64, 'name must be at most 64 characters')
  .describe('What the token is for, in your words (1 to 64 characters): shown by list_tokens.');

const tokenInfo = z
  .object({
    token_id: z.uuid(),
    name: z.string(),
    scopes: z.array(z.string()).describe('Empty: the full access of your agent.'),
    created_at: z.iso.datetime(),
    last_used_at: z.iso
      .datetime()
      .nullable()
      .describe('To the minute: a token used again within a minute is not written down again.'),
    expires_at: z.iso.datetime().nullable(),
    current: z.boolean().describe('True for the token this call was made with.'),
  })
  .meta({ id: 'TokenInfo' });

const createToken = defineOperation({
  name: 'create_token',
  method: 'POST',
  path: '/whoami/tokens',
  auth: 'agent',
  tokenScope: 'handler',
  status: 201,
  mintsSecret: true,
  maxBodyBytes: 4096,
  summary: 'Make another API token, optionally restricted (read only, one workspace) or expiring.',
  description: [
    'Makes a new API token for your agent, shown only this once (keep it as you keep the first).',
    'Give each tool or helper its own token, with the least it needs: `scopes: ["read"]` can read',
    'but not write; `scopes: ["workspace:<workspace_id>"]` reaches that one workspace only (and',
    'sees only its changes); both together: read that workspace only. `expires_in_hours` (a',
    `number > 0, fractions allowed, at most ${MAX_TOKEN_HOURS}) makes it stop by itself; without`,
    'it the token lasts until revoked. A restricted token may make only tokens at least as',
    'restricted as itself (`403 token_scope`), and a read-only token may make none.',
    `One agent holds at most ${MAX_TOKENS_PER_AGENT} live tokens (\`409 limit_reached\`).`,
  ].join(' '),
  input: z.strictObject({
    name: tokenName,
    scopes: tokenScopesSchema.optional(),
    expires_in_hours: z
      .number()
      .positive('expires_in_hours must be more than 0')
      .max(MAX_TOKEN_HOURS, `expires_in_hours may be at most ${MAX_TOKEN_HOURS}`)
      .optional()
      .describe('How long the token lasts, in hours; without it, until revoked.'),
  }),
  output: z
    .object({
      token_id: z.uuid(),
      api_token: z.string().describe('Shown once. Keep it secret.'),
      name: z.string(),
      scopes: z.array(z.string()),
      expires_at: z.iso.datetime().nullable(),
    })
    .meta({ id: 'NewToken' }),
  errors: ['token_scope', 'limit_reached', 'not_found'],
});

const listTokens = defineOperation({
  name: 'list_tokens',
  method: 'GET',
  path: '/whoami/tokens',
  auth: 'agent',
  tokenScope: 'handler',
  readOnly: true,
  status: 200,
  summary:
    'Your live API tokens: names, scopes, when made, last used and expiry (never the secret).',
  description: [
    'Lists your live tokens (revoked and expired ones are left out), oldest first, with when each',
    'was last used, so that one you do not recognise can be revoked. The secret is never shown',
    'again. A token restricted to one workspace sees only itself here.',
  ].join(' '),
  input: z.strictObject({}),
  output: z.object({ tokens: z.array(tokenInfo) }).meta({ id: 'TokenList' }),
  errors: [],
});

const revokeToken = defineOperation({
  name: 'revoke_token',
  method: 'DELETE',
  path: '/whoami/tokens/:token_id',
  auth: 'agent',
  tokenScope: 'handler',
  status: 200,
  summary: 'Revoke one of your tokens: it stops working at once, on every door.',
  description: [
    'Revokes a token of yours by its `token_id` (from list_tokens). It stops at once: requests,',
    'MCP sessions and socket.io connections made with it are refused from then on (open sockets',
    'are disconnected). A restricted token may revoke only itself. Revoking the token you call',
    'with is allowed; keep another one first, or you cannot sign in again.',
  ].join(' '),
  input: z.strictObject({ token_id: z.uuid() }),
  output: z.object({ token_id: z.uuid(), revoked: z.literal(true) }).meta({ id: 'RevokedToken' }),
  errors: ['not_found', 'token_scope'],
});

const rotateToken = defineOperation({
  name: 'rotate_token',
  method: 'POST',
  path: '/whoami/tokens/rotate',
  auth: 'agent',
  tokenScope: 'handler',
  status: 201,
  mintsSecret: true,
  maxBodyBytes: 1024,
  summary: 'Replace the token you call with by a new one (same name, scopes and expiry).',
  description: [
    "Makes a new token with the calling token's name, scopes and expiry and retires the calling",
    'one: at once (the default), or after `grace_hours` (0 to 24, fractions allowed) so that the',
    'places holding it can be updated first. Do this whenever a token may have been seen by',
    'anyone else. Any token may rotate itself, a read-only one included.',
  ].join(' '),
  input: z.strictObject({
    grace_hours: z
      .number()
      .min(0, 'grace_hours must be 0 or more')
      .max(MAX_ROTATION_GRACE_HOURS, `grace_hours may be at most ${MAX_ROTATION_GRACE_HOURS}`)
      .optional()
      .describe('How long the old token keeps working, in hours (default 0: it stops at once).'),
  }),
  output: z
    .object({
      token_id: z.uuid(),
      api_token: z.string().describe('Shown once. Keep it secret.'),
      name: z.string(),
      scopes: z.array(z.string()),
      expires_at: z.iso.datetime().nullable(),
      old_token_id: z.uuid(),
      old_token_stops_at: z.iso.datetime(),
    })
    .meta({ id: 'RotatedToken' }),
  errors: ['limit_reached'],
});

/** The caller's tokens: make, list, revoke, rotate. */
export const TOKEN_OPERATIONS = {
  create_token: createToken,
  list_tokens: listTokens,
  revoke_token: revokeToken,
  rotate_token: rotateToken,
} as const;
