import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import * as assert from 'uvu/assert';
import { callTool, toolProblem } from './clients.ts';
import { callJson, type JsonAnswer } from './http.ts';
import type { TestServer } from './server.ts';
import type { Json, Problem } from './wire-types.ts';

/** A token as create_token and rotate_token answer it (the secret shown once). */
export interface NewToken {
  token_id: string;
  api_token: string;
  name: string;
  scopes: string[];
  expires_at: string | null;
}

/** One line of list_tokens. */
export interface TokenLine {
  token_id: string;
  name: string;
  scopes: string[];
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
  current: boolean;
}

/** A refusal with the members token refusals add. */
export type TokenProblem = Problem & { reason?: string; needed?: string; scopes?: string[] };

/** create_token as `token`, through the HTTP door. */
export const createToken = (server: TestServer, token: string, body: Json) =>
  callJson<NewToken & TokenProblem>(server, 'POST', '/whoami/tokens', token, body);

/** create_token that must succeed: the new token. */
export async function madeToken(server: TestServer, token: string, body: Json): Promise<NewToken> {
  const made = await createToken(server, token, body);
  assert.is(made.status, 201, JSON.stringify(made.body));
  return made.body;
}

/** list_tokens as `token`: the lines, failing the test unless it answers 200. */
export async function listTokens(server: TestServer, token: string): Promise<TokenLine[]> {
  const listed = await callJson<{ tokens: TokenLine[] }>(server, 'GET', '/whoami/tokens', token);
  assert.is(listed.status, 200, JSON.stringify(listed.body));
  return listed.body.tokens;
}

export const revokeToken = (server: TestServer, token: string, tokenId: string) =>
  callJson<TokenProblem>(server, 'DELETE', `/whoami/tokens/${tokenId}`, token);

export const rotateToken = (server: TestServer, token: string, body: Json = {}) =>
  callJson<NewToken & { old_token_id: string; old_token_stops_at: string } & TokenProblem>(
    server,
    'POST',
    '/whoami/tokens/rotate',
    token,
    body,
  );

/** GET /whoami as `token`: its status and problem, when refused. */
export const whoamiAs = (server: TestServer, token: string): Promise<JsonAnswer<TokenProblem>> =>
  callJson<TokenProblem>(server, 'GET', '/whoami', token);

/** Fails the test unless `answer` is the 401 of a token refused for `reason`. */
export function assertRefused(answer: JsonAnswer<TokenProblem>, reason: string, where: string) {
  assert.is(answer.status, 401, `${where}: ${JSON.stringify(answer.body)}`);
  assert.is(answer.body.code, 'unauthorized', where);
  assert.is(answer.body.reason, reason, where);
}

/** Fails the test unless `answer` is a 403 token_scope that names `needed`. */
export function assertScopeRefusal(answer: JsonAnswer<TokenProblem>, needed: string, what: string) {
  assert.is(answer.status, 403, `${what}: ${JSON.stringify(answer.body)}`);
  assert.is(answer.body.code, 'token_scope', what);
  assert.is(answer.body.needed, needed, what);
}

/**
 * A tool call over MCP: as the client's header token, or with `api_token` as an argument.
 * Answers the problem when the call was refused, else null.
 */
export async function toolRefusal(
  client: Client,
  name: string,
  args: Json,
): Promise<TokenProblem | null> {
  const result = await callTool(client, name, args);
  return result.isError ? (toolProblem(result) as TokenProblem) : null;
}
