import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DOCUMENTS } from '../../protocol/documents.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** The curl examples of the served documents work when pasted into a shell. */
const test = suite<{ server: TestServer }>('the curl examples of the reference documents');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

test('every curl example quotes a URL that holds a query or a placeholder, so a shell keeps all of it', async ({
  server,
}) => {
  let examples = 0;
  for (const document of DOCUMENTS) {
    const text = await (await server.get(document.path)).text();
    for (const line of text.split('\n')) {
      if (!line.includes('curl ')) continue;
      const command = line.slice(line.indexOf('curl '));
      examples += 1;
      // A URL that does not start right after a quote is unquoted: `&` would end the command
      // there, `?` is a glob, and `<workspace_id>` a redirection from a file.
      for (const match of command.matchAll(/(^|[^'"])(https?:\/\/[^\s'"`]*)/g)) {
        assert.not.match(match[2] ?? '', /[?&<>]/, `${document.path}: ${line.trim()}`);
      }
    }
  }
  assert.ok(examples > 10, 'the documents hold curl examples');
});

test.run();
