import * as assert from 'uvu/assert';
import { newToken } from '../../actors/kernel/tokens.ts';
import { mcpClient, serverSuite } from '../helpers/server-suite.ts';
import { toolRefusal, whoamiAs } from '../helpers/tokens.ts';

/**
 * A token whose checksum does not hold is refused by its form alone, at the HTTP and MCP doors.
 * The token operations' other refusals (bad input, too many tokens) are capability rules:
 * tokens-refusals-rules.test.ts.
 */
const test = serverSuite('token operations refuse forgeries');

test('a token with our prefix but a checksum that does not hold is refused as malformed, unlike an unknown one', async (context) => {
  const { server } = context;
  const real = newToken();
  const last = real.at(-1) === 'A' ? 'B' : 'A';
  const forged = `${real.slice(0, -1)}${last}`;
  const refused = await whoamiAs(server, forged);
  assert.is(refused.status, 401, JSON.stringify(refused.body));
  assert.is(refused.body.code, 'unauthorized');
  assert.match(refused.body.detail, /malformed/);
  // Only a lookup can say `unknown`: the forgery never got that far, and says `malformed`.
  assert.is(refused.body.reason, 'malformed');

  const unknown = await whoamiAs(server, real);
  assert.is(unknown.status, 401);
  assert.is(unknown.body.reason, 'unknown', 'a well-formed token is looked up');

  const anonymous = await mcpClient(context, '');
  const overMcp = await toolRefusal(anonymous, 'whoami', { api_token: forged });
  assert.is(overMcp?.code, 'unauthorized');
  assert.match(overMcp?.detail ?? '', /malformed/);
  assert.is(overMcp?.reason, 'malformed');
});

test.run();
