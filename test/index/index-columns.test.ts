import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { INDEX_COLUMNS, queryIndex } from '../../protocol/index/sql.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import type { TestAgent } from '../helpers/workspaces.ts';

/**
 * The columns the index's relations are said to have (the query_index description, made from
 * INDEX_COLUMNS, and /index/protocol) are the columns they have, read through POST /index/sql.
 */
const test = suite<{ server: TestServer; agent: TestAgent }>('the index columns as documented');

test.before(async (context) => {
  context.server = await startTestServer();
  context.agent = await context.server.signUp();
});
test.after(async ({ server }) => {
  await server.close();
});

/** Each relation with the columns documented for it (`file_versions`: the same as `files`). */
const DOCUMENTED: Record<string, readonly string[]> = {
  files: INDEX_COLUMNS.files,
  file_versions: INDEX_COLUMNS.files,
  store: INDEX_COLUMNS.store,
  axis_values: INDEX_COLUMNS.axis_values,
};

async function columnsOf(
  context: { server: TestServer; agent: TestAgent },
  sql: string,
  scope: string,
): Promise<string[]> {
  const response = await context.server.post('/index/sql', { sql, scope }, context.agent.api_token);
  const body = (await response.json()) as { columns: { name: string }[]; detail?: string };
  assert.is(response.status, 200, `${sql} (scope ${scope}): ${body.detail}`);
  return body.columns.map((column) => column.name);
}

test('every column the query_index description names can be selected from its relation, in every scope', async (context) => {
  for (const [relation, columns] of Object.entries(DOCUMENTED)) {
    for (const column of columns) {
      assert.ok(queryIndex.description.includes(column), `the description names ${column}`);
    }
    for (const scope of ['own', 'public', 'store']) {
      const sql = `select ${columns.join(', ')} from ${relation} limit 0`;
      assert.equal(await columnsOf(context, sql, scope), [...columns]);
    }
  }
});

test('the query_index description leaves out no column of any relation', async (context) => {
  for (const [relation, columns] of Object.entries(DOCUMENTED)) {
    const all = await columnsOf(context, `select * from ${relation} limit 0`, 'own');
    assert.equal(all, [...columns], relation);
  }
});

test('/index/protocol lists for each relation exactly the columns it has', async (context) => {
  const text = await (await context.server.get('/index/protocol')).text();
  for (const [relation, columns] of Object.entries(DOCUMENTED)) {
    const bullet = text.split('\n').find((line) => line.startsWith(`- \`${relation}\`: `));
    assert.ok(bullet, `/index/protocol has a bullet for ${relation}`);
    if (relation === 'file_versions') {
      assert.ok(bullet.includes('the same columns'), bullet);
      continue;
    }
    // The column names are the backticked words of the bullet's first sentence, outside the
    // parentheses that say more of one (their backticked words are values and examples).
    const listed = firstSentence(withoutParentheses(bullet.slice(`- \`${relation}\`: `.length)));
    const named = [...listed.matchAll(/`([a-z_0-9]+)`/g)].map((match) => match[1]);
    assert.equal(named, [...columns], relation);
  }
});

function withoutParentheses(text: string): string {
  let kept = '';
  let depth = 0;
  for (const character of text) {
    if (character === '(') depth += 1;
    else if (character === ')') depth -= 1;
    else if (depth === 0) kept += character;
  }
  return kept;
}

function firstSentence(text: string): string {
  const end = text.search(/\.(\s|$)/);
  return end === -1 ? text : text.slice(0, end);
}

test.run();
