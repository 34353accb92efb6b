import { encodeCursor } from '../../protocol/events.ts';
import { cursorSeq } from '../cursor.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { readChanges } from '../../storage/changes.ts';
import type { AgentActor } from '../agent-actor.ts';
import type { Services } from '../services.ts';
import type { Handler } from './types.ts';

const DEFAULT_LIMIT = 50;
const DEFAULT_WAIT_SECONDS = 30;

/** Where to read from: the given cursor, or the agent's remembered place. */
async function startSeq(
  services: Services,
  agent: AgentActor,
  after: string | undefined,
): Promise<number> {
  if (after === undefined) return agent.readSeq;
  return cursorSeq(services, agent.agentId, after).catch((error: ServiceError) => {
    throw new ServiceError(error.code, error.message, { field: 'after' });
  });
}

async function readPage(services: Services, agent: AgentActor, from: number, limit: number) {
  const rows = await readChanges(services.driver, agent.agentId, from, limit);
  const last = rows.at(-1)?.seq ?? from;
  // The place moves in the agent's mailbox, so concurrent readers cannot move it back.
  await services.agents.send(agent.agentId, (actor) => actor.markRead(last));
  return { changes: rows.map((row) => row.event), cursor: encodeCursor(last) };
}

export const changes: Handler<'changes'> = async ({ services, agent }, input) => {
  const from = await startSeq(services, agent, input.after);
  return readPage(services, agent, from, input.limit ?? DEFAULT_LIMIT);
};

export const waitForChanges: Handler<'wait_for_changes'> = async (
  { services, agent, signal },
  input,
) => {
  const from = await startSeq(services, agent, input.after);
  const limit = input.limit ?? DEFAULT_LIMIT;
  const timeoutMs = (input.timeout ?? DEFAULT_WAIT_SECONDS) * 1000;
  // Listen before reading, so a change committed between the read and the wait still wakes us.
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const woken = services.hub.waitForChange(agent.agentId, timeoutMs, stop.signal);
  try {
    const first = await readPage(services, agent, from, limit);
    if (first.changes.length > 0 || timeoutMs === 0) return first;
    await woken;
    if (signal.aborted) return first;
    return await readPage(services, agent, from, limit);
  } finally {
    stop.abort();
    signal.removeEventListener('abort', onAbort);
  }
};
