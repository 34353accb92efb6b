import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enginesHere } from '../helpers/engines.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The one rule for a JSON body's Content-Type (protocol/documents/protocol.md, "Requests and
 * answers"): `application/json` and `+json` types are taken; so is a body with no type or with
 * `application/x-www-form-urlencoded` (curl -d's default) when it parses as JSON; any other
 * type is refused with 415 `unsupported_media_type`, saying to send `application/json`.
 */
type Context = { server: TestServer };

/** Signs up through POST /agents with `body` and the Content-Type given (none: undefined). */
async function signUp(server: TestServer, contentType: string | undefined, body: string) {
  const response = await fetch(server.url('/agents'), {
    method: 'POST',
    headers: contentType === undefined ? {} : { 'content-type': contentType },
    // Bytes, not a string: fetch would add `text/plain` to a string body sent with no type.
    body: new TextEncoder().encode(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: JSON.parse(text) as { code?: string; detail?: string; name?: string },
  };
}

for (const engine of enginesHere(import.meta.filename)) {
  const test = suite<Context>(`a JSON body is taken by one rule for its Content-Type (${engine})`);

  test.before(async (context) => {
    context.server = await startTestServer({ httpEngine: engine });
  });
  test.after(async ({ server }) => {
    await server.close();
  });

  const taken: [string, string | undefined][] = [
    ['application/json', 'application/json'],
    ['application/json with a charset', 'application/json; charset=utf-8'],
    ['application/json in capitals', 'Application/JSON'],
    ['a +json type', 'application/vnd.api+json'],
    ['no Content-Type at all', undefined],
    ["curl -d's default form type", 'application/x-www-form-urlencoded'],
  ];
  for (const [what, type] of taken) {
    test(`a JSON body sent as ${what} is taken`, async ({ server }) => {
      const name = `typed ${engine} ${what.replace(/[^a-z ]/gi, '')}`.slice(0, 60);
      const answer = await signUp(server, type, JSON.stringify({ name }));
      assert.is(answer.status, 201, JSON.stringify(answer.body));
      assert.is(answer.body.name, name);
    });
  }

  for (const type of ['text/plain', 'multipart/form-data; boundary=x', 'application/xml']) {
    test(`a body sent as ${type} is refused with 415, saying to send application/json`, async ({
      server,
    }) => {
      const answer = await signUp(server, type, JSON.stringify({ name: 'never signed up' }));
      assert.is(answer.status, 415);
      assert.is(answer.body.code, 'unsupported_media_type');
      assert.match(String(answer.body.detail), `not \`${type.split(';')[0]}\``);
      assert.match(String(answer.body.detail), '`Content-Type: application/json`');
    });
  }

  test('a form-encoded body that is not JSON is refused as invalid_json, saying why', async ({
    server,
  }) => {
    const answer = await signUp(server, 'application/x-www-form-urlencoded', 'name=form%20bot');
    assert.is(answer.status, 400);
    assert.is(answer.body.code, 'invalid_json');
    assert.match(String(answer.body.detail), 'form-encoded');
    assert.match(String(answer.body.detail), '`Content-Type: application/json`');
  });

  test('a body with no Content-Type that is not JSON is refused as invalid_json', async ({
    server,
  }) => {
    const answer = await signUp(server, undefined, 'name: bot');
    assert.is(answer.status, 400);
    assert.is(answer.body.code, 'invalid_json');
  });

  test.run();
}
