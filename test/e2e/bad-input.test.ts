import { request as httpRequest } from 'node:http';
import { suite } from 'uvu';
import { newToken } from '../../actors/kernel/tokens.ts';
import * as assert from 'uvu/assert';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const test = suite<{ server: TestServer; token: string }>(
  'bad input gets problem+json and writes nothing',
);

test.before(async (context) => {
  context.server = await startTestServer();
  context.token = (await context.server.signUp('bad input owner')).api_token;
});
test.after(async ({ server }) => {
  await server.close();
});

async function counts(server: TestServer) {
  const [row] = await server.services.driver.query<{
    agents: number;
    changes: number;
    feedback: number;
  }>(
    `select (select count(*) from agents)::int8 as agents, (select count(*) from changes)::int8 as changes,
            (select count(*) from feedback)::int8 as feedback`,
  );
  return row;
}

/** Asserts a problem+json answer with the status and code, and that nothing was written. */
async function expectProblem(
  server: TestServer,
  send: () => Promise<Response>,
  status: number,
  code: string,
) {
  const before = await counts(server);
  const response = await send();
  assert.is(response.status, status, `status for ${code}`);
  assert.is(response.headers.get('content-type'), 'application/problem+json');
  const problem = (await response.json()) as Record<string, unknown>;
  assert.is(problem.code, code);
  assert.is(problem.status, status);
  assert.type(problem.title, 'string');
  assert.ok((problem.detail as string).length > 10, 'the detail says what to fix');
  assert.ok(String(problem.type).endsWith(`/protocol#error-${code}`));
  assert.not.match(JSON.stringify(problem), /at .*\.ts:|select |insert /i);
  assert.equal(await counts(server), before, 'nothing was written');
  return { response, problem };
}

const json = (
  server: TestServer,
  path: string,
  body: string,
  headers: Record<string, string> = {},
) =>
  fetch(server.url(path), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });

test('a missing token answers 401 with WWW-Authenticate', async ({ server }) => {
  const { response } = await expectProblem(
    server,
    () => server.get('/whoami'),
    401,
    'unauthorized',
  );
  assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer/);
});

test('a malformed token answers 401', async ({ server }) => {
  await expectProblem(server, () => server.get('/whoami', 'asvc_tooShort'), 401, 'unauthorized');
});

test('a token of the right form that was never issued answers 401', async ({ server }) => {
  // Well formed (its checksum holds), so only the lookup can refuse it.
  const forged = newToken();
  const { response, problem } = await expectProblem(
    server,
    () => server.get('/whoami', forged),
    401,
    'unauthorized',
  );
  assert.ok(response.headers.get('www-authenticate'));
  assert.match(problem.detail as string, /not known/);
});

test('a token with another prefix answers 401 and names the right prefix', async ({
  server,
  token,
}) => {
  const { problem } = await expectProblem(
    server,
    () => server.get('/whoami', `ghp_${token.slice(5)}`),
    401,
    'unauthorized',
  );
  assert.match(problem.detail as string, /asvc_/);
});

test('an Authorization header of another scheme answers 401', async ({ server, token }) => {
  await expectProblem(
    server,
    () => fetch(server.url('/whoami'), { headers: { authorization: `Basic ${token}` } }),
    401,
    'unauthorized',
  );
});

test('an empty name is refused', async ({ server }) => {
  await expectProblem(server, () => server.post('/agents', { name: '' }), 400, 'invalid_input');
});

test('a name longer than 64 characters is refused', async ({ server }) => {
  await expectProblem(
    server,
    () => server.post('/agents', { name: 'n'.repeat(65) }),
    400,
    'invalid_input',
  );
});

test('a name with control characters is refused', async ({ server }) => {
  await expectProblem(
    server,
    () => server.post('/agents', { name: 'bad\u0007name' }),
    400,
    'invalid_input',
  );
  await expectProblem(
    server,
    () => server.post('/agents', { name: 'two\nlines' }),
    400,
    'invalid_input',
  );
});

test("a name containing the operator's name in any case is reserved", async ({ server }) => {
  await expectProblem(
    server,
    () => server.post('/agents', { name: 'My SERVICE helper' }),
    422,
    'name_reserved',
  );
  await expectProblem(
    server,
    () => server.post('/agents', { name: 'service' }),
    422,
    'name_reserved',
  );
});

test('an unknown body field is refused, not ignored', async ({ server }) => {
  const { problem } = await expectProblem(
    server,
    () => server.post('/agents', { name: 'ok', admin: true }),
    400,
    'unknown_field',
  );
  assert.equal(problem.fields, ['admin']);
});

test('a field of the wrong JSON type is refused', async ({ server }) => {
  const { problem } = await expectProblem(
    server,
    () => server.post('/agents', { name: 42 }),
    400,
    'invalid_input',
  );
  assert.is(problem.field, 'name');
});

test('a body that is not JSON is refused', async ({ server }) => {
  await expectProblem(server, () => json(server, '/agents', '{"name": "x"'), 400, 'invalid_json');
});

test('a JSON body that is not an object is refused', async ({ server }) => {
  await expectProblem(server, () => json(server, '/agents', '["x"]'), 400, 'invalid_input');
});

test('a body of another content type is refused', async ({ server }) => {
  await expectProblem(
    server,
    () =>
      fetch(server.url('/agents'), {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: 'name: x',
      }),
    415,
    'unsupported_media_type',
  );
});

test('a huge body is refused with 413 from its declared length', async ({ server }) => {
  const huge = JSON.stringify({ name: 'x'.repeat(200_000) });
  await expectProblem(server, () => json(server, '/agents', huge), 413, 'payload_too_large');
});

test('a huge chunked body without a declared length is refused with 413', async ({ server }) => {
  const before = await counts(server);
  const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const request = httpRequest(server.url('/agents'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
    });
    request.on('response', (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    request.on('error', reject);
    request.write('{"name": "');
    const chunk = 'x'.repeat(64 * 1024);
    // Far more than the route takes; the server answers before it is all sent.
    let sent = 0;
    const pump = () => {
      while (sent < 64) {
        sent++;
        if (!request.write(chunk)) return request.once('drain', pump);
      }
      request.end('"}');
    };
    pump();
  });
  assert.is(answer.status, 413);
  assert.is((JSON.parse(answer.body) as { code: string }).code, 'payload_too_large');
  assert.equal(await counts(server), before);
});

test('an unknown route answers 404 problem+json', async ({ server }) => {
  await expectProblem(server, () => server.get('/no/such/route'), 404, 'not_found');
});

test('a known path with the wrong method answers 405 naming the methods it takes', async ({
  server,
}) => {
  const { response } = await expectProblem(
    server,
    () => fetch(server.url('/whoami'), { method: 'DELETE' }),
    405,
    'method_not_allowed',
  );
  assert.is(response.headers.get('allow'), 'GET, HEAD');
});

test('a malformed cursor is refused', async ({ server, token }) => {
  await expectProblem(
    server,
    () => server.get('/changes?after=garbage', token),
    400,
    'invalid_cursor',
  );
});

test('a cursor beyond anything issued to the agent is refused', async ({ server, token }) => {
  await expectProblem(
    server,
    () => server.get('/changes?after=czzzz', token),
    400,
    'invalid_cursor',
  );
});

test('an unknown query parameter is refused', async ({ server, token }) => {
  await expectProblem(server, () => server.get('/changes?since=1', token), 400, 'unknown_field');
});

test('a limit out of range or not a number is refused', async ({ server, token }) => {
  await expectProblem(server, () => server.get('/changes?limit=0', token), 400, 'invalid_input');
  await expectProblem(server, () => server.get('/changes?limit=501', token), 400, 'invalid_input');
  await expectProblem(server, () => server.get('/changes?limit=many', token), 400, 'invalid_input');
  await expectProblem(
    server,
    () => server.get('/changes/wait?timeout=61', token),
    400,
    'invalid_input',
  );
});

test('feedback with an unknown category is refused', async ({ server }) => {
  await expectProblem(
    server,
    () => server.post('/feedback', { message: 'hi', category: 'rant' }),
    400,
    'invalid_input',
  );
});

test('feedback with a bad token is refused rather than taken anonymously', async ({ server }) => {
  await expectProblem(
    server,
    () => server.post('/feedback', { message: 'hi', category: 'idea' }, 'asvc_bad'),
    401,
    'unauthorized',
  );
});

test.run();
