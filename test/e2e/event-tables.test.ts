import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DOCUMENTS } from '../../protocol/documents.ts';
import { EVENTS, type EventDeclaration } from '../../protocol/events.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** The event tables the documents serve say what protocol/events.ts says, type by type. */
const test = suite<{ server: TestServer }>('the event tables of the reference documents');

test.before(async (context) => {
  context.server = await startTestServer();
});
test.after(async ({ server }) => {
  await server.close();
});

const declarations = Object.entries(EVENTS) as [string, EventDeclaration][];

test('/notifications/protocol and /protocol list every event type, sent today or planned as protocol/events.ts says', async ({
  server,
}) => {
  for (const path of ['/notifications/protocol', '/protocol']) {
    const text = await (await server.get(path)).text();
    assert.not.ok(text.includes('{event_table}'), `${path} has its table filled in`);
    for (const [type, declaration] of declarations) {
      const row = text.split('\n').find((line) => line.startsWith(`| \`${type}\` |`));
      assert.ok(row, `${path} has a row for ${type}`);
      const sent = row.split('|').at(-2)?.trim();
      assert.is(sent, declaration.planned ? 'planned' : 'today', `${path}: ${row}`);
      assert.ok(row.includes(declaration.description), `${path} says when ${type} is sent`);
    }
  }
});

test('no reference document calls an event type planned that is sent today', async ({ server }) => {
  const sentToday = declarations.filter(([, declaration]) => !declaration.planned);
  // The changelog is history: it may say what was planned once.
  for (const document of DOCUMENTS.filter((d) => d.path !== '/changelog')) {
    const text = await (await server.get(document.path)).text();
    // A table row is one statement; elsewhere, one sentence is.
    const statements = text
      .split('\n')
      .flatMap((line) => (line.startsWith('|') ? [line] : line.split(/(?<=\.)\s+/)));
    for (const statement of statements) {
      if (!/planned/i.test(statement)) continue;
      for (const [type] of sentToday) {
        assert.not.ok(
          statement.includes(`\`${type}\``),
          `${document.path} calls ${type} planned: ${statement}`,
        );
      }
    }
  }
});

test.run();
