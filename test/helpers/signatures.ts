import { createHash, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { httpbis } from 'http-message-signatures';
import { callJson } from './http.ts';
import type { TestServer } from './server.ts';

/**
 * Signed requests as an independent client makes them: the `http-message-signatures` library
 * (RFC 9421) signs, node:crypto holds the Ed25519 key. The service's own signer is not used, so
 * that a test of the service cannot pass by sharing its mistakes.
 */
export interface AgentKey {
  readonly privateKey: KeyObject;
  readonly jwk: { kty: 'OKP'; crv: 'Ed25519'; x: string };
  /** Set once add_key answered. */
  keyId: string;
}

export function newKey(): AgentKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const { x } = publicKey.export({ format: 'jwk' }) as { x: string };
  return { privateKey, jwk: { kty: 'OKP', crv: 'Ed25519', x }, keyId: '' };
}

/** Adds `key` to the agent of `token` (unsigned: the agent does not require signatures yet). */
export async function addKey(server: TestServer, token: string, key: AgentKey): Promise<string> {
  const added = await callJson<{ key_id: string }>(server, 'POST', '/whoami/keys', token, {
    jwk: key.jwk,
    name: 'test key',
  });
  if (added.status !== 201) throw new Error(`add_key: ${JSON.stringify(added.body)}`);
  key.keyId = added.body.key_id;
  return key.keyId;
}

export interface SignOptions {
  /** Covered components; default: what the service requires of this request. */
  fields?: string[];
  created?: Date;
  expires?: Date;
  /** A nonce; default: a new UUID. `null`: none. */
  nonce?: string | null;
  keyId?: string;
  label?: string;
  alg?: string;
}

/**
 * The headers of a request signed with `key`: `Content-Digest` of the body when there is one,
 * then `Signature-Input` and `Signature` made by http-message-signatures.
 */
export async function signedHeaders(
  key: AgentKey,
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: string | Uint8Array,
  options: SignOptions = {},
): Promise<Record<string, string>> {
  const all: Record<string, string> = { ...headers };
  if (body !== undefined) {
    all['content-digest'] = `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
  }
  const target = new URL(url);
  const fields = options.fields ?? [
    '@method',
    '@authority',
    '@path',
    ...(target.search ? ['@query'] : []),
    ...(all.authorization ? ['authorization'] : []),
    ...(body !== undefined ? ['content-digest'] : []),
  ];
  const nonce = options.nonce === undefined ? randomUUID() : options.nonce;
  const signed = await httpbis.signMessage(
    {
      key: {
        id: options.keyId ?? key.keyId,
        alg: options.alg ?? 'ed25519',
        sign: (data: Buffer) => Promise.resolve(sign(null, data, key.privateKey)),
      },
      name: options.label ?? 'sig1',
      fields,
      params: [
        'created',
        'keyid',
        'alg',
        ...(nonce === null ? [] : ['nonce']),
        ...(options.expires ? ['expires'] : []),
      ],
      paramValues: {
        created: options.created ?? new Date(),
        ...(nonce === null ? {} : { nonce }),
        ...(options.expires ? { expires: options.expires } : {}),
      },
    },
    { method, url, headers: all },
  );
  return signed.headers as Record<string, string>;
}

/** One signed JSON request through the real HTTP door; its status and JSON body. */
export async function signedJson<T = Record<string, unknown>>(
  server: TestServer,
  key: AgentKey,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
  options: SignOptions = {},
): Promise<{ status: number; body: T & { code?: string; reason?: string; detail?: string } }> {
  const text = body === undefined ? undefined : JSON.stringify(body);
  const base: Record<string, string> = { accept: 'application/json' };
  if (token) base.authorization = `Bearer ${token}`;
  if (text !== undefined) base['content-type'] = 'application/json';
  const headers = await signedHeaders(key, method, server.url(path), base, text, options);
  const response = await fetch(server.url(path), {
    method,
    headers,
    ...(text === undefined ? {} : { body: text }),
  });
  const answer = await response.text();
  return { status: response.status, body: (answer ? JSON.parse(answer) : {}) as never };
}
