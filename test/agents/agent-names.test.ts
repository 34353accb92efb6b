import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { callJson } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * Names an agent signs up with, through both doors that take them (HTTP and MCP): look-alikes
 * of the operator's name are reserved, names that mix scripts or show nothing are refused, and
 * ordinary names in any one script are taken.
 */
type Context = { server: TestServer; mcp: Client };
const test = suite<Context>('agent names: look-alikes, mixed scripts and empty names');

test.before(async (context) => {
  context.server = await startTestServer();
  context.mcp = new Client({ name: 'name-tester', version: '1.0.0' });
  await context.mcp.connect(new StreamableHTTPClientTransport(new URL(context.server.url('/mcp'))));
});
test.after(async ({ server, mcp }) => {
  await mcp.close();
  await server.close();
});

type Refusal = { name: string; why: string; status: number; code: string; hint: RegExp };

const lookAlike = (name: string, why: string): Refusal => ({
  name,
  why,
  status: 422,
  code: 'name_reserved',
  hint: /service/,
});
const invalid = (name: string, why: string, hint: RegExp): Refusal => ({
  name,
  why,
  status: 400,
  code: 'invalid_input',
  hint,
});

const REFUSED: Refusal[] = [
  lookAlike('ѕеrvісе', 'Cyrillic letters that look like Latin ones'),
  lookAlike('ｓｅｒｖｉｃｅ', 'fullwidth Latin letters'),
  lookAlike('servıce', 'a dotless i'),
  lookAlike('ſervice', 'a long s'),
  lookAlike('𝗌𝖾𝗋𝗏𝗂𝖼𝖾', 'mathematical sans-serif letters'),
  lookAlike('my ЅЕRVІСЕ bot', 'a look-alike inside a longer name, in capitals'),
  lookAlike('serv\u3164ice', 'the name with an invisible letter inside'),
  lookAlike('SERVlCE', 'capitals with a small L for the capital I'),
  lookAlike('sErVlCe', 'mixed case with a small L for the capital I'),
  lookAlike('ser vice', 'a space inside'),
  lookAlike('s.e.r.v.i.c.e', 'dots between the letters'),
  lookAlike('s_e-r v.i.c.e', 'mixed separators'),
  lookAlike('sérvice', 'an accent'),
  lookAlike('şervice', 'a cedilla'),
  lookAlike('seɾvice', 'an r with a fishhook (U+027E)'),
  lookAlike('sɛrvice', 'an open e (U+025B)'),
  invalid('   ', 'spaces only', /visible letter or digit/),
  invalid('...', 'punctuation only', /visible letter or digit/),
  invalid('-_ .', 'separators only', /visible letter or digit/),
  invalid('\u3164', 'a Hangul filler (U+3164)', /invisible.*U\+3164/),
  invalid('\u115F', 'a Hangul choseong filler (U+115F)', /invisible.*U\+115F/),
  invalid('\u1160', 'a Hangul jungseong filler (U+1160)', /invisible.*U\+1160/),
  invalid('\uFFA0', 'a halfwidth Hangul filler (U+FFA0)', /invisible.*U\+FFA0/),
  invalid('bob\u3164', 'a visible name with an invisible letter after it', /invisible/),
  invalid('pаypal', 'a Latin name with one Cyrillic a', /Latin.*Cyrillic.*one script/),
  invalid('agent Σ', 'Latin and Greek', /one script/),
  invalid('bot 日本', 'Latin and Han', /one script/),
];

const TAKEN = [
  'Ünïcode-bot',
  '日本語エージェント',
  'agent 42',
  'Σωκράτης',
  'Привет бот',
  '한국어 봇',
  'server-observer',
  'nice vice sernice',
];

for (const refusal of REFUSED) {
  test(`sign-up over HTTP refuses ${JSON.stringify(refusal.name)} (${refusal.why}) with ${refusal.code}`, async ({
    server,
  }) => {
    const answer = await callJson<{ code: string; detail: string; field?: string }>(
      server,
      'POST',
      '/agents',
      null,
      { name: refusal.name },
    );
    assert.is(answer.status, refusal.status, JSON.stringify(answer.body));
    assert.is(answer.body.code, refusal.code);
    assert.is(answer.body.field, 'name');
    assert.match(answer.body.detail, refusal.hint);
  });

  test(`sign_up over MCP refuses ${JSON.stringify(refusal.name)} (${refusal.why}) with ${refusal.code}`, async ({
    mcp,
  }) => {
    const result = (await mcp.callTool({
      name: 'sign_up',
      arguments: { name: refusal.name },
    })) as { isError?: boolean; content: { text: string }[] };
    assert.ok(result.isError, 'the tool answers an error');
    const problem = JSON.parse(result.content[0]?.text ?? '{}') as { code: string; detail: string };
    assert.is(problem.code, refusal.code);
    assert.match(problem.detail, refusal.hint);
  });
}

for (const name of TAKEN) {
  test(`sign-up over HTTP and MCP takes ${JSON.stringify(name)}`, async ({ server, mcp }) => {
    const answer = await callJson<{ name: string }>(server, 'POST', '/agents', null, { name });
    assert.is(answer.status, 201, JSON.stringify(answer.body));
    assert.is(answer.body.name, name);
    const result = (await mcp.callTool({ name: 'sign_up', arguments: { name } })) as {
      isError?: boolean;
      structuredContent?: { name: string };
    };
    assert.not.ok(result.isError);
    assert.is(result.structuredContent?.name, name);
  });
}

test.run();
