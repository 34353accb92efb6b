import { spawn } from 'node:child_process';
import * as assert from 'uvu/assert';
import { clientSuite, type ExternalClient } from '../helpers/real-clients.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * /openapi.json read by Python, as a Python client validates with it: every `pattern` compiles
 * with `re`, and `jsonschema` (Draft 2020-12) takes the schemas and judges real bodies with
 * them: a sign-up request and the service's answer fit, a bad body does not. (A `\p{L}` in a
 * pattern made both refuse the document.)
 */

/** Debian's Python with `jsonschema` (python3-jsonschema; python3-azure depends on it). */
const PYTHON_JSONSCHEMA: ExternalClient = {
  name: 'Python jsonschema',
  probe: ['/usr/bin/python3', '-c', 'import jsonschema'],
  debian: 'python3-jsonschema',
};

const test = clientSuite<{ server: TestServer }>(
  '/openapi.json with Python re and jsonschema',
  PYTHON_JSONSCHEMA,
);

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

/**
 * Reads `{document, request, answer}` on stdin; prints `{patterns, bad_patterns, request_errors,
 * answer_errors, bad_request_errors}`.
 */
const SCRIPT = String.raw`
import json, re, sys
import jsonschema

given = json.load(sys.stdin)
document = given['document']
found, bad = [], []

def walk(node, at):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == 'pattern' and isinstance(value, str):
                found.append(value)
                try:
                    re.compile(value)
                except re.error as error:
                    bad.append('%s: %s (%s)' % (at, value, error))
            else:
                walk(value, at + '/' + key)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            walk(value, '%s/%d' % (at, index))

walk(document, '')
resolver = jsonschema.RefResolver('', document)

def errors(pointer, instance):
    schema = {'$ref': '#' + pointer}
    validator = jsonschema.Draft202012Validator(schema, resolver=resolver)
    return [error.message for error in validator.iter_errors(instance)]

body = '/paths/~1agents/post/requestBody/content/application~1json/schema'
answer = '/paths/~1agents/post/responses/201/content/application~1json/schema'
print(json.dumps({
    'patterns': len(found),
    'bad_patterns': bad,
    'request_errors': errors(body, given['request']),
    'answer_errors': errors(answer, given['answer']),
    'bad_request_errors': errors(body, {'name': 'x', 'surplus': 1}),
}))
`;

function python(input: unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/python3', ['-c', SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`python exited ${code}: ${stderr}`)),
    );
    child.stdin.end(JSON.stringify(input));
  });
}

test('Python compiles every pattern and validates a real sign-up with the schemas', async ({
  server,
}) => {
  const document = (await (await server.get('/openapi.json')).json()) as unknown;
  const request = { name: 'Zoë Python' };
  const signedUp = await server.post('/agents', request);
  assert.is(signedUp.status, 201);
  const answer = (await signedUp.json()) as unknown;
  const result = JSON.parse(await python({ document, request, answer })) as {
    patterns: number;
    bad_patterns: string[];
    request_errors: string[];
    answer_errors: string[];
    bad_request_errors: string[];
  };
  assert.ok(result.patterns > 10, 'patterns were read');
  assert.equal(result.bad_patterns, [], 'every pattern compiles with re');
  assert.equal(result.request_errors, [], 'the sign-up body fits');
  assert.equal(result.answer_errors, [], "the service's answer fits");
  assert.ok(result.bad_request_errors.length > 0, 'an unknown field does not fit');
});

test.run();
