import { io, type Socket } from 'socket.io-client';
import * as assert from 'uvu/assert';
import { newToken, TOKEN_PREFIX, tokenShape } from '../../actors/kernel/tokens.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { Problem } from '../helpers/wire-types.ts';

/**
 * Every token the socket.io door refuses, whatever its shape, is refused with `data.reason` as
 * the documents list it: a token of no known shape (malformed, another service's prefix, not a
 * string at all) says `malformed`, as every door says it; a well-formed token never issued says
 * `unknown`.
 */
const test = serverSuite('socket.io: a refused token always says why');

type RefusedProblem = Problem & { reason?: string };

const refusal = (socket: Socket) =>
  new Promise<RefusedProblem>((resolve, reject) => {
    socket.once('connect', () => reject(new Error('the socket was let in')));
    socket.once('connect_error', (error) => resolve((error as { data: RefusedProblem }).data));
  });

const wellFormed = newToken();
/** One token of each shape the door tells apart before any lookup, and one that is no string. */
const REFUSED: { name: string; token: unknown; reason: string }[] = [
  { name: 'malformed (cut short)', token: wellFormed.slice(0, -3), reason: 'malformed' },
  {
    name: 'malformed (checksum broken)',
    token: `${wellFormed.slice(0, -1)}${wellFormed.endsWith('A') ? 'B' : 'A'}`,
    reason: 'malformed',
  },
  { name: 'another prefix', token: `x${wellFormed}`, reason: 'malformed' },
  { name: 'well-formed but never issued', token: wellFormed, reason: 'unknown' },
  { name: 'not a string', token: 12345, reason: 'malformed' },
];

test('a malformed, foreign or non-string token is refused with data.reason malformed, an unknown one with unknown', async (context) => {
  const shapes = new Set(
    REFUSED.flatMap(({ token }) => (typeof token === 'string' ? [tokenShape(token)] : [])),
  );
  assert.equal([...shapes].sort(), ['malformed', 'ok', 'wrong_prefix'], 'every shape is tried');
  assert.ok(wellFormed.startsWith(TOKEN_PREFIX));
  for (const { name, token, reason } of REFUSED) {
    const socket = io(context.server.baseUrl, {
      auth: { token },
      transports: ['websocket'],
      reconnection: false,
    });
    context.sockets.push(socket);
    const problem = await refusal(socket);
    assert.is(problem.code, 'unauthorized', name);
    assert.is(problem.reason, reason, `${name}: ${JSON.stringify(problem)}`);
  }
});

test('a connection with no token at all is refused without a reason: no token was refused', async (context) => {
  const socket = io(context.server.baseUrl, {
    auth: {},
    transports: ['websocket'],
    reconnection: false,
  });
  context.sockets.push(socket);
  const problem = await refusal(socket);
  assert.is(problem.code, 'unauthorized');
  assert.is(problem.reason, undefined);
});

test.run();
