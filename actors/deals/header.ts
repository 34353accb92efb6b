import { ServiceError } from '../../protocol/errors.ts';
import type { Queryable } from '../../storage/driver.ts';
import { agentNames } from '../../storage/agents/agent-names.ts';
import { findVersionHeader } from '../../storage/index/version-headers.ts';

/**
 * The deal header ("The deal file" in protocol/documents/deals-protocol.md): a deal is a
 * markdown file whose YAML header has `deal` (a title) and `parties` (agent_id, need, can), as
 * the index read it from one version. Checked here, each problem named by its field, and every
 * party a signed-up agent.
 */

interface Party {
  agent_id: string;
  name: string;
  need: string;
  can: string;
}

export interface DealHeader {
  title: string;
  parties: Party[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function dealInvalid(detail: string, problems: { field: string; problem: string }[] = []) {
  return new ServiceError('deal_invalid', detail, problems.length ? { problems } : {});
}

/**
 * The deal header of one indexed version, checked; unknown agents refused. Null when the file
 * was deleted since: the index let go of its versions' headers (rule `every_kept_byte`), so
 * there is nothing to show or agree to.
 */
export async function dealHeader(
  db: Queryable,
  workspaceId: string,
  path: string,
  version: number,
): Promise<DealHeader | null> {
  const header = await findVersionHeader(db, workspaceId, path, version);
  if (header === 'let_go') return null;
  if (!header) {
    throw dealInvalid(
      'That version is not markdown with a valid YAML header (list_files shows index_error).',
    );
  }
  const { deal, parties } = header.fields;
  const problems: { field: string; problem: string }[] = [];
  if (typeof deal !== 'string' || deal.trim() === '') {
    problems.push({ field: 'deal', problem: 'the header needs `deal`: a title' });
  }
  const list = Array.isArray(parties) ? parties : [];
  if (list.length < 2) {
    problems.push({ field: 'parties', problem: 'the header lists at least two parties' });
  }
  const seen = new Set<string>();
  list.forEach((party: unknown, i) => {
    const p = (party ?? {}) as Record<string, unknown>;
    if (typeof p.agent_id !== 'string' || !UUID.test(p.agent_id)) {
      problems.push({ field: `parties[${i}].agent_id`, problem: 'an agent id (uuid)' });
    } else if (seen.has(p.agent_id)) {
      problems.push({ field: `parties[${i}].agent_id`, problem: 'named twice' });
    } else seen.add(p.agent_id);
    for (const key of ['need', 'can'] as const) {
      if (typeof p[key] !== 'string' || (p[key] as string).trim() === '') {
        problems.push({ field: `parties[${i}].${key}`, problem: `every party states its ${key}` });
      }
    }
  });
  if (problems.length > 0) {
    throw dealInvalid(problems.map((p) => `${p.field}: ${p.problem}`).join('; '), problems);
  }
  const ids = [...seen];
  const names = await agentNames(db, ids);
  const unknown = ids.filter((id) => !names.has(id));
  if (unknown.length > 0) {
    throw dealInvalid(`The header names agents that are not signed up: ${unknown.join(', ')}.`, [
      { field: 'parties', problem: `unknown agents: ${unknown.join(', ')}` },
    ]);
  }
  return {
    title: deal as string,
    parties: (list as Record<string, string>[]).map((p) => ({
      agent_id: p.agent_id as string,
      name: names.get(p.agent_id as string) as string,
      need: p.need as string,
      can: p.can as string,
    })),
  };
}
