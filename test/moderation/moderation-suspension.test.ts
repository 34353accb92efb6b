import { randomUUID } from 'node:crypto';
import { simpleParser } from 'mailparser';
import * as assert from 'uvu/assert';
import { createMailAccount } from '../../actors/email/accounts.ts';
import { newToken } from '../../actors/kernel/tokens.ts';
import type { InboundMail } from '../../server/email/inbound.ts';
import { mailRouter } from '../../server/email/mailgate.ts';
import { heard } from '../helpers/changes.ts';
import { callTool, connectMcp, toolProblem } from '../helpers/clients.ts';
import { callJson as call } from '../helpers/http.ts';
import { mcpClient, serverSuite } from '../helpers/server-suite.ts';
import { ids, postListing, repairIn, storeJson } from '../helpers/store.ts';
import type { TestServer } from '../helpers/server.ts';
import { newWorkspace, saveFile, type TestAgent } from '../helpers/workspaces.ts';

/**
 * suspend_agent and restore_agent (issue 23): every token of a suspended agent answers 401
 * `reason: suspended` on HTTP and MCP, its mail commands are refused, its listings leave the
 * store, its public workspaces are no longer readable by others (files, the workspace, the
 * index); restore_agent gives every one of them back, and the agent's feed says both.
 */
const test = serverSuite('a suspended agent is stopped everywhere until restored', () => {
  const operatorToken = newToken();
  return { extra: { operatorToken }, config: { operatorToken, mailDomain: 'mail.test' } };
});

const MISSING = '6f1c0a52-1b9e-4c1a-a0f4-2f6c8e9b1d20';

/** What the agent and the others see of it, through each door that the suspension touches. */
async function reach(
  server: TestServer,
  agent: TestAgent & { second: string },
  reader: TestAgent,
  place: { listingId: string; workspaceId: string },
) {
  const whoami = await call<{ reason?: string }>(server, 'GET', '/whoami', agent.api_token);
  const whoamiSecond = await call<{ reason?: string }>(server, 'GET', '/whoami', agent.second);
  const mcp = await connectMcp(server, agent.api_token, 'suspended');
  const overMcp = await callTool(mcp, 'whoami', {});
  await mcp.close();
  const file = await server.get(
    `/workspaces/${place.workspaceId}/files/notes/public.md`,
    reader.api_token,
  );
  const workspace = await server.get(`/workspaces/${place.workspaceId}`, reader.api_token);
  const index = await call<{ rows: unknown[][] }>(server, 'POST', '/index/sql', reader.api_token, {
    sql: 'select path from files where workspace_id = $1::uuid',
    params: [place.workspaceId],
    scope: 'public',
  });
  assert.is(index.status, 200, JSON.stringify(index.body));
  return {
    http: whoami.status === 200 ? 'works' : `${whoami.status} ${whoami.body.reason}`,
    httpSecondToken:
      whoamiSecond.status === 200 ? 'works' : `${whoamiSecond.status} ${whoamiSecond.body.reason}`,
    mcp: overMcp.isError
      ? `${toolProblem(overMcp).status} ${(toolProblem(overMcp) as { reason?: string }).reason}`
      : 'works',
    inStore: ids((await storeJson(server, '?limit=500')).body.listings).includes(place.listingId),
    publicFile: file.status,
    publicWorkspace: workspace.status,
    inIndex: index.body.rows.length,
  };
}

const WORKING = {
  http: 'works',
  httpSecondToken: 'works',
  mcp: 'works',
  inStore: true,
  publicFile: 200,
  publicWorkspace: 200,
  inIndex: 1,
};
const SUSPENDED = {
  http: '401 suspended',
  httpSecondToken: '401 suspended',
  mcp: '401 suspended',
  inStore: false,
  publicFile: 404,
  publicWorkspace: 404,
  inIndex: 0,
};

/** A command mail from the agent's own address to its private address; the answer's text. */
const accounts = new Map<string, string>();

async function mailCommand(server: TestServer, agentId: string, subject: string) {
  let localPart = accounts.get(agentId);
  if (localPart === undefined) {
    const account = await createMailAccount(server.services.db(), server.services, {
      agentId,
      senderAddress: `${agentId}@person.example`,
    });
    localPart = account.localPart;
    accounts.set(agentId, localPart);
  }
  const mail: InboundMail = {
    messageId: `<${randomUUID()}@sender.example>`,
    envelopeFrom: `${agentId}@person.example`,
    from: `${agentId}@person.example`,
    recipient: `${localPart}@mail.test`,
    remoteIp: '127.0.0.1',
    subject,
    text: '',
    inReplyTo: null,
    references: [],
    attachments: [],
    auth: { spf: 'pass', dkim: 'pass', dmarc: 'pass', aligned: true },
  };
  await mailRouter(server.services, () => undefined).agent(mail, agentId);
  const rows = await server.services
    .db()
    .query<{ raw: Uint8Array }>('select raw from mail_outbox order by created_at, mail_id');
  for (const row of rows.reverse()) {
    const parsed = await simpleParser(Buffer.from(row.raw));
    if (parsed.inReplyTo === mail.messageId) return parsed.text ?? '';
  }
  throw new Error('no answer to the command mail');
}

test('suspend_agent stops its tokens on HTTP and MCP, its mail, its listings and its public workspaces; restore_agent gives all back', async (context) => {
  const { server, operatorToken } = context;
  const agent = await server.signUp();
  const made = await call<{ api_token: string }>(
    server,
    'POST',
    '/whoami/tokens',
    agent.api_token,
    {
      name: 'helper',
    },
  );
  assert.is(made.status, 201, JSON.stringify(made.body));
  const suspect = { ...agent, second: made.body.api_token };
  const posted = await postListing(server, agent, repairIn('Arles'));
  assert.is(posted.status, 201);
  const workspaceId = await newWorkspace(server, agent, 'public');
  await saveFile(
    server,
    agent,
    workspaceId,
    'notes/public.md',
    '---\ntitle: Open to all\n---\n# Open to all\n',
  );
  const reader = await server.signUp();
  const place = { listingId: posted.body.listing_id, workspaceId };
  assert.equal(await reach(server, suspect, reader, place), WORKING);
  assert.match(await mailCommand(server, agent.agent_id, 'whoami'), agent.agent_id);
  // Open before the suspension: the client's next call is refused, not served from its session.
  const openClient = await mcpClient(context, agent.api_token);

  const suspended = await call<{ suspended: boolean }>(
    server,
    'POST',
    `/operator/agents/${agent.agent_id}/suspend`,
    operatorToken,
    { reason: 'Posts phishing links.' },
  );
  assert.is(suspended.status, 200, JSON.stringify(suspended.body));
  assert.is(suspended.body.suspended, true);
  assert.equal(await reach(server, suspect, reader, place), SUSPENDED);
  const refusedOnOpenClient = await callTool(openClient, 'whoami', {});
  assert.is(toolProblem(refusedOnOpenClient).status, 401);
  const unknownWorkspace = await server.get(`/workspaces/${MISSING}`, reader.api_token);
  const hiddenWorkspace = await server.get(`/workspaces/${workspaceId}`, reader.api_token);
  assert.is(
    await hiddenWorkspace.text(),
    await unknownWorkspace.text(),
    'byte for byte the answer for a workspace that does not exist',
  );
  const mailed = await mailCommand(server, agent.agent_id, 'whoami');
  assert.match(mailed, 'suspended');
  assert.not.match(mailed, `name: ${agent.name}`, 'the command did not run');

  const restored = await call<{ suspended: boolean }>(
    server,
    'POST',
    `/operator/agents/${agent.agent_id}/restore`,
    operatorToken,
    { reason: 'The links were a mistake of a plugin.' },
  );
  assert.is(restored.status, 200, JSON.stringify(restored.body));
  assert.is(restored.body.suspended, false);
  assert.equal(await reach(server, suspect, reader, place), WORKING);
  assert.not.match(await mailCommand(server, agent.agent_id, 'whoami'), 'suspended');

  const notices = await heard(server, agent, 'operator.notice');
  assert.equal(
    notices.map((n) => n.data),
    [
      { action: 'suspend_agent', reason: 'Posts phishing links.', from_operator: true },
      {
        action: 'restore_agent',
        reason: 'The links were a mistake of a plugin.',
        from_operator: true,
      },
    ],
  );
});

test('suspend_agent and restore_agent work over MCP for the operator', async (context) => {
  const { server, operatorToken } = context;
  const agent = await server.signUp();
  const client = await mcpClient(context, operatorToken, 'operator');
  const done = await callTool(client, 'suspend_agent', {
    agent_id: agent.agent_id,
    reason: 'Spam.',
  });
  assert.not.ok(done.isError, JSON.stringify(done));
  const refused = await call<{ reason?: string }>(server, 'GET', '/whoami', agent.api_token);
  assert.is(refused.status, 401);
  assert.is(refused.body.reason, 'suspended');
  const self = await callTool(client, 'suspend_agent', {
    agent_id: server.services.operatorId,
    reason: 'Oops.',
  });
  assert.is(toolProblem(self).code, 'operator_not_suspendable');
  const back = await callTool(client, 'restore_agent', { agent_id: agent.agent_id, reason: 'Ok.' });
  assert.not.ok(back.isError, JSON.stringify(back));
  assert.is((await server.get('/whoami', agent.api_token)).status, 200);
});

test('a hidden listing stays hidden when its suspended author is restored, and a suspended author keeps its shown listings out until then', async ({
  server,
  operatorToken,
}) => {
  const agent = await server.signUp();
  const first = await postListing(server, agent, repairIn('Nimes'));
  const second = await postListing(server, agent, repairIn('Sete'));
  const act = (path: string) => call(server, 'POST', path, operatorToken, { reason: 'why' });
  assert.is((await act(`/operator/listings/${first.body.listing_id}/hide`)).status, 200);
  assert.is((await act(`/operator/agents/${agent.agent_id}/suspend`)).status, 200);
  assert.is((await act(`/operator/listings/${first.body.listing_id}/show`)).status, 200);
  const during = ids((await storeJson(server, '?limit=500')).body.listings);
  assert.not.ok(during.includes(first.body.listing_id), 'shown, but its author is suspended');
  assert.not.ok(during.includes(second.body.listing_id));
  assert.is((await act(`/operator/listings/${second.body.listing_id}/hide`)).status, 200);
  assert.is((await act(`/operator/agents/${agent.agent_id}/restore`)).status, 200);
  const after = ids((await storeJson(server, '?limit=500')).body.listings);
  assert.ok(after.includes(first.body.listing_id));
  assert.not.ok(after.includes(second.body.listing_id), 'still hidden by the operator');
});

test.run();
