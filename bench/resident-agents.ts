/**
 * Memory of resident agents: 100,000 AgentActors held by the real actor registry (loaded
 * through `get`, as a request loads its caller), each made as `loadAgentActor` makes it from
 * its row, with a stored machine snapshot (the common case once an agent has read its feed).
 * No database: the rows are made here, so the figure is the registry's and the actors' own.
 * Prints the heap and RSS growth per agent and for all of them, beside the target (100,000
 * resident agents under 500 MB RSS for the whole service). Run in a process of its own with
 * --expose-gc (bench/idle-rss-section.ts does).
 */
import { readFileSync } from 'node:fs';
import { AgentActor } from '../actors/agents/actor.ts';
import { ActorRegistry } from '../actors/kernel/registry.ts';
import { agentCodec } from '../machines/agent.ts';
import type { Queryable } from '../storage/driver.ts';

const AGENTS = Number(process.env.RESIDENT_AGENTS ?? 100_000);

const gc = (globalThis as { gc?: () => void }).gc;
function settledMemory(): { heapMb: number; rssMb: number } {
  gc?.();
  gc?.();
  const rssKb = Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]);
  return { heapMb: process.memoryUsage().heapUsed / 1048576, rssMb: rssKb / 1024 };
}

/** What a row of an agent that has read its feed once looks like (storage/agents/agents.ts). */
function rowOf(index: number) {
  const agentId = `ag_${index.toString(36).padStart(20, '0')}`;
  const machine = agentCodec.persist(agentCodec.start({ readSeq: index }));
  return {
    agentId,
    name: `agent-${index}`,
    isOperator: false,
    createdAt: new Date(1_700_000_000_000 + index * 1000),
    // A stored snapshot goes through JSON on its way from the database.
    machine: JSON.parse(JSON.stringify(machine)) as unknown,
    version: 3,
    lastSeq: index + 10,
    readSeq: index,
  };
}

const registry = new ActorRegistry<AgentActor>({
  kind: 'agent',
  load: (id) => {
    const row = rowOf(Number.parseInt(id.slice(3), 36));
    return Promise.resolve(new AgentActor(row, agentCodec.restore(row.machine), row.lastSeq));
  },
  lock: () => Promise.resolve(null),
  db: () => ({}) as Queryable,
  commit: () => Promise.reject(new Error('no commits in this bench')),
  capacity: AGENTS + 1,
});

const before = settledMemory();
for (let index = 0; index < AGENTS; index++) {
  await registry.get(`ag_${index.toString(36).padStart(20, '0')}`);
}
const after = settledMemory();
if (registry.size !== AGENTS) throw new Error(`registry holds ${registry.size}, not ${AGENTS}`);

const heapBytes = ((after.heapMb - before.heapMb) * 1048576) / AGENTS;
const rssMb = after.rssMb - before.rssMb;
console.log(
  `resident agents: ${AGENTS.toLocaleString('en')} in the registry, ${heapBytes.toFixed(0)} heap bytes per agent, ` +
    `heap +${(after.heapMb - before.heapMb).toFixed(0)} MB, RSS +${rssMb.toFixed(0)} MB (this process ${after.rssMb.toFixed(0)} MB)`,
);
console.log(
  `resident agents target: the service's idle RSS + ${rssMb.toFixed(0)} MB under 500 MB for 100,000 agents`,
);
