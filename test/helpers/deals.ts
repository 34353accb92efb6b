import * as assert from 'uvu/assert';
import { callJson as call } from './http.ts';
import { room } from './rooms.ts';
import type { TestServer } from './server.ts';
import type { Agent, Json, Receipt } from './wire-types.ts';
import { saveFile } from './workspaces.ts';

/**
 * Deals through HTTP, as the deal tests call them: deal files written as deals-protocol.md shows
 * them, agreeing, delivering, rating, get_deal and reputation, with the shapes the service
 * answers.
 */

export interface Round {
  version: number;
  sha256: string;
  parties: string[];
  agreed: string[];
}

export interface Deal {
  deal_id: string | null;
  workspace_id: string;
  path: string;
  title: string | null;
  status: string;
  parties: { agent_id: string; name: string; need: string; can: string }[];
  former_parties: { agent_id: string; name: string }[];
  agreed: Round | null;
  round: Round | null;
  agreements: {
    agreement_id: string;
    agent_id: string;
    version: number;
    sha256: string;
    at: string;
    receipt: Receipt;
  }[];
  deliveries: {
    delivery_id: string;
    agent_id: string;
    note: string | null;
    files: PinnedFile[];
    at: string;
    receipt: Receipt;
  }[];
  ratings: {
    rating_id: string;
    rater: string;
    ratee: string;
    delivered_can: boolean;
    accepted_on_need: boolean;
    score: number | null;
    comment: string | null;
    payment_backed: boolean;
    at: string;
    superseded_by: string | null;
    receipt: Receipt;
  }[];
  payments: unknown[];
}

export interface PinnedFile {
  path: string;
  version: number;
  size: number;
  sha256: string;
}

export interface Agreed {
  deal_id: string;
  status: string;
  agreement: Receipt;
}
export interface Delivered {
  delivery_id: string;
  files: PinnedFile[];
  receipt: Receipt;
}
export interface Rated {
  rating_id: string;
  payment_backed: boolean;
  supersedes: string | null;
  receipt: Receipt;
}

export interface Reputation {
  agent_id: string;
  name: string;
  since: string;
  counts: Record<string, number>;
  counterparties: {
    agent_id: string;
    name: string;
    deals_agreed: number;
    payments_final: number;
  }[];
  ratings: {
    rating_id: string;
    deal_id: string;
    rater: { agent_id: string; name: string };
    delivered_can: boolean;
    accepted_on_need: boolean;
    score: number | null;
    comment: string | null;
    payment_backed: boolean;
    at: string;
  }[];
  payments: unknown[];
}

/** The counts of a reputation with nothing on record. */
export const NO_REPUTATION_COUNTS = {
  deals_agreed: 0,
  payments_made: 0,
  payments_received: 0,
  payment_backed_ratings: 0,
  offchain_payments_confirmed: 0,
  distinct_counterparties: 0,
};

export interface PartyLine {
  agent_id: string;
  need: string;
  can: string;
}

/** A deal file as the protocol shows it: a YAML header with `deal` and `parties`, then terms. */
export function dealText(
  title: string | null,
  parties: PartyLine[],
  terms = 'Terms on record.',
): string {
  const lines = ['---'];
  if (title !== null) lines.push(`deal: ${JSON.stringify(title)}`);
  lines.push('parties:');
  for (const p of parties) {
    lines.push(
      `  - agent_id: ${JSON.stringify(p.agent_id)}`,
      `    need: ${JSON.stringify(p.need)}`,
      `    can: ${JSON.stringify(p.can)}`,
    );
  }
  lines.push('---', terms);
  return lines.join('\n');
}

export const lineOf = (agent: { agent_id: string }, i: number): PartyLine => ({
  agent_id: agent.agent_id,
  need: `need of party ${i}`,
  can: `can of party ${i}`,
});

/** The `version` and `sha256` of a file, as `list_files` shows them. */
export async function listed(server: TestServer, agent: Agent, workspaceId: string, path: string) {
  const page = await call<{ files: PinnedFile[] }>(
    server,
    'GET',
    `/workspaces/${workspaceId}/files?prefix=${encodeURIComponent(path)}`,
    agent.api_token,
  );
  assert.is(page.status, 200);
  const file = page.body.files.find((f) => f.path === path);
  assert.ok(file, `${path} is listed`);
  return { version: file.version, sha256: file.sha256, size: file.size };
}

export const agree = (
  server: TestServer,
  agent: Agent,
  workspaceId: string,
  path: string,
  at: { version: number; sha256: string },
) =>
  call<Agreed>(server, 'POST', '/deals/agree', agent.api_token, {
    workspace_id: workspaceId,
    path,
    version: at.version,
    sha256: at.sha256,
  });

export const deliver = (
  server: TestServer,
  agent: Agent,
  dealId: string,
  files: string[],
  note?: string,
) =>
  call<Delivered>(server, 'POST', '/deals/deliver', agent.api_token, {
    deal_id: dealId,
    files,
    ...(note === undefined ? {} : { note }),
  });

export const rate = (
  server: TestServer,
  agent: Agent,
  dealId: string,
  ratee: { agent_id: string },
  extra: Json = {},
) =>
  call<Rated>(server, 'POST', '/deals/rate', agent.api_token, {
    deal_id: dealId,
    agent_id: ratee.agent_id,
    delivered_can: true,
    accepted_on_need: true,
    ...extra,
  });

export const getDeal = (server: TestServer, agent: Agent, workspaceId: string, path: string) =>
  call<Deal>(
    server,
    'GET',
    `/deals?workspace_id=${workspaceId}&path=${encodeURIComponent(path)}`,
    agent.api_token,
  );

export async function dealOf(server: TestServer, agent: Agent, workspaceId: string, path: string) {
  const shown = await getDeal(server, agent, workspaceId, path);
  assert.is(shown.status, 200, JSON.stringify(shown.body));
  return shown.body;
}

export const reputationOf = async (server: TestServer, agent: { agent_id: string }) => {
  const answer = await call<Reputation>(
    server,
    'GET',
    `/agents/${agent.agent_id}/reputation`,
    null,
  );
  assert.is(answer.status, 200, JSON.stringify(answer.body));
  return answer.body;
};

/**
 * A room whose deal file at `deal.md` names `parties` of its agents (the first two unless told);
 * saved by the first agent.
 */
export async function dealRoom(server: TestServer, size = 2, partyCount = 2) {
  const { workspaceId, agents } = await room(server, size);
  const parties = agents.slice(0, partyCount);
  const text = dealText('Logo for the translation bot', parties.map(lineOf));
  const saved = await saveFile(server, agents[0] as Agent, workspaceId, 'deal.md', text);
  const at = await listed(server, agents[0] as Agent, workspaceId, 'deal.md');
  return { workspaceId, agents, parties, text, saved, at };
}

/** Every party agrees to `at`, one after another; answers the deal id. */
export async function agreeAll(
  server: TestServer,
  parties: Agent[],
  workspaceId: string,
  at: { version: number; sha256: string },
  path = 'deal.md',
) {
  let dealId = '';
  for (const party of parties) {
    const agreed = await agree(server, party, workspaceId, path, at);
    assert.is(agreed.status, 200, JSON.stringify(agreed.body));
    dealId = agreed.body.deal_id;
  }
  return dealId;
}
