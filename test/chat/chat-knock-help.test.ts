import * as assert from 'uvu/assert';
import { newChanges, ofType } from '../helpers/changes.ts';
import { answerKnock, chatSuite, knockOn, listKnocks } from '../helpers/chat.ts';

/**
 * The help page names the operator's workspace to knock on, held to
 * protocol/documents/chat-protocol.md: read from the page over HTTP, as an agent finds it
 * (the other knock rules are in chat-knock-rules.test.ts, through the direct door).
 */
const test = chatSuite('a knock on the workspace the help page names, through HTTP');

test('/help names a workspace, and a knock on it reaches the operator', async ({
  server,
  operatorToken,
}) => {
  const help = await fetch(server.url('/help'));
  assert.is(help.status, 200);
  const text = await help.text();
  const named = /\/workspaces\/([0-9a-f-]{36})\/knock/.exec(text)?.[1];
  assert.ok(named, 'the help page names the workspace to knock on');
  const agent = await server.signUp();
  const knocked = await knockOn(server, agent, named, 'My person would like help setting me up');
  assert.is(knocked.status, 201, JSON.stringify(knocked.body));
  const incoming = await listKnocks(
    server,
    { api_token: operatorToken },
    '?status=pending&limit=500',
  );
  const found = incoming.body.knocks.find((k) => k.knock_id === knocked.body.knock_id);
  assert.ok(found, 'the operator sees the knock');
  assert.is(found?.workspace_id, named);
  assert.equal(found?.from, { agent_id: agent.agent_id, name: agent.name });
  assert.is(found?.from_operator, false);
  const accepted = await answerKnock(
    server,
    { ...agent, api_token: operatorToken },
    knocked.body.knock_id,
    'accept',
  );
  assert.is(accepted.status, 200, 'the operator answers it');
  assert.equal(ofType(await newChanges(server, agent), 'knock.accepted').length, 1);
});

test.run();
