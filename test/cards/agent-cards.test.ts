import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import * as assert from 'uvu/assert';
import { callTool, toolProblem } from '../helpers/clients.ts';
import { callJson as call } from '../helpers/http.ts';
import { mcpClient } from '../helpers/server-suite.ts';
import { postListing, repairIn, storeSuite } from '../helpers/store.ts';
import type { Json } from '../helpers/wire-types.ts';

/**
 * A2A agent cards (protocol/cards.ts): the service's at /.well-known/agent-card.json and
 * one per agent, each validated against the A2A v1.0 AgentCard schema (derived from the
 * specification's a2a.proto: test/fixtures/a2a/README.md), through HTTP and MCP.
 */
const test = storeSuite('agent cards (A2A v1.0)');

const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats.default(ajv);
const validCard = ajv.compile(
  JSON.parse(
    readFileSync(new URL('../fixtures/a2a/agent-card.schema.json', import.meta.url), 'utf8'),
  ),
);

function assertValidCard(card: unknown, what: string) {
  const ok = validCard(card);
  assert.ok(ok, `${what}: ${JSON.stringify(validCard.errors, null, 1)}`);
}

interface Skill {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[];
}
interface Card {
  name: string;
  description: string;
  supportedInterfaces: { url: string; protocolBinding: string; protocolVersion: string }[];
  securitySchemes: Record<string, { httpAuthSecurityScheme: { scheme: string } }>;
  documentationUrl: string;
  skills: Skill[];
}

const operatorCall = (
  context: { server: Parameters<typeof call>[0]; operatorToken: string },
  path: string,
) => call(context.server, 'POST', path, context.operatorToken, { reason: 'test' });

test('the service card validates as an A2A v1.0 AgentCard and names the MCP endpoint, the HTTP API and bearer auth', async ({
  server,
}) => {
  const got = await call<Card>(server, 'GET', '/.well-known/agent-card.json', null);
  assert.is(got.status, 200, JSON.stringify(got.body));
  assertValidCard(got.body, 'the service card');
  const base = server.services.config.baseUrl;
  assert.equal(
    got.body.supportedInterfaces.map((i) => i.url),
    [`${base}/mcp`, base],
  );
  assert.is(got.body.supportedInterfaces[1]?.protocolBinding, `${base}/openapi.json`);
  assert.is(got.body.securitySchemes.bearer?.httpAuthSecurityScheme.scheme, 'Bearer');
  assert.ok(got.body.skills.length > 0);
  assert.ok(got.body.skills.some((skill) => skill.id === 'reputation'));
});

test("an agent's card validates, names it, and lists each live Can listing as a skill tagged with its convention and dimension values; needs and hidden listings are left out", async (context) => {
  const { server } = context;
  const seller = await server.signUp('card-seller');
  const berlin = await postListing(server, seller, repairIn('Berlin'));
  const paris = await postListing(
    server,
    seller,
    repairIn('Paris', { dimensions: { service: 'e-bike repair', location: 'Paris' } }),
  );
  const need = await postListing(server, seller, { ...repairIn('Rome'), kind: 'need', need: 'x' });
  for (const posted of [berlin, paris, need]) assert.is(posted.status, 201);

  const got = await call<Card>(server, 'GET', `/agents/${seller.agent_id}/agent-card.json`, null);
  assert.is(got.status, 200, JSON.stringify(got.body));
  assertValidCard(got.body, "the agent's card");
  assert.is(got.body.name, 'card-seller');
  assert.is(
    got.body.documentationUrl,
    `${server.services.config.baseUrl}/agents/${seller.agent_id}`,
  );
  const byId = new Map(got.body.skills.map((skill) => [skill.id, skill]));
  assert.equal([...byId.keys()].sort(), [berlin.body.listing_id, paris.body.listing_id].sort());
  const berlinSkill = byId.get(berlin.body.listing_id);
  assert.equal(
    { ...berlinSkill, tags: [] },
    {
      id: berlin.body.listing_id,
      name: 'Bicycle repair in Berlin',
      description: 'Flat tyres, brakes and gears, at your door.',
      tags: [],
      examples: ['I repair bicycles of every kind.'],
    },
  );
  // The convention's name first, then the listing's dimension values.
  const tagsOf = (skill: Skill | undefined) => [skill?.tags[0], skill?.tags.slice(1).sort()];
  assert.equal(tagsOf(berlinSkill), ['local-services', ['Berlin', 'bicycle repair', 'yes']]);
  assert.equal(tagsOf(byId.get(paris.body.listing_id)), [
    'local-services',
    ['Paris', 'e-bike repair'],
  ]);

  // The operator hides one: it leaves the card as it leaves the store.
  const hidden = await operatorCall(context, `/operator/listings/${paris.body.listing_id}/hide`);
  assert.is(hidden.status, 200, JSON.stringify(hidden.body));
  const after = await call<Card>(server, 'GET', `/agents/${seller.agent_id}/agent-card.json`, null);
  assert.equal(
    after.body.skills.map((skill) => skill.id),
    [berlin.body.listing_id],
  );
  assertValidCard(after.body, 'the card after a hide');
});

test('over MCP the cards are tools that answer the same documents', async (context) => {
  const { server } = context;
  const agent = await server.signUp('card-mcp');
  const client = await mcpClient(context, agent.api_token);
  const service = await callTool(client, 'get_service_card');
  const overHttp = await call<Json>(server, 'GET', '/.well-known/agent-card.json', null);
  assert.equal(JSON.parse(service.content[0]?.text ?? ''), overHttp.body);
  const own = await callTool(client, 'get_agent_card', { agent_id: agent.agent_id });
  assertValidCard(JSON.parse(own.content[0]?.text ?? ''), 'over MCP');
  const missing = await callTool(client, 'get_agent_card', {
    agent_id: '00000000-0000-4000-8000-000000000000',
  });
  assert.ok(missing.isError);
  assert.is(toolProblem(missing).code, 'not_found');
});

test('an unknown or suspended agent has no card (the same 404 bytes); a non-UUID id is 400 invalid_input', async (context) => {
  const { server } = context;
  const agent = await server.signUp('card-suspended');
  const unknown = await server.get('/agents/00000000-0000-4000-8000-000000000000/agent-card.json');
  assert.is(unknown.status, 404);
  const unknownText = await unknown.text();
  const suspended = await operatorCall(context, `/operator/agents/${agent.agent_id}/suspend`);
  assert.is(suspended.status, 200, JSON.stringify(suspended.body));
  const gone = await server.get(`/agents/${agent.agent_id}/agent-card.json`);
  assert.is(gone.status, 404);
  assert.is(await gone.text(), unknownText, 'byte for byte the answer for an unknown agent');
  const bad = await call<{ code: string }>(
    server,
    'GET',
    '/agents/not-a-uuid/agent-card.json',
    null,
  );
  assert.is(bad.status, 400);
  assert.is(bad.body.code, 'invalid_input');
});

test.run();
