import { createActor, transition, type SnapshotFrom } from 'xstate';
import { agentMachine, type AgentEvent } from '../../machines/agent.ts';
import { findAgent, saveAgentState, type AgentRow } from '../../storage/agents.ts';
import type { Queryable, Transaction } from '../../storage/driver.ts';
import { principalOf, type Principal } from '../kernel/principal.ts';
import type { PersistentActor } from '../kernel/registry.ts';

type AgentSnapshot = SnapshotFrom<typeof agentMachine>;

/**
 * One agent, live: its record and its machine's snapshot, at the version of its row. This is
 * the reference for every actor (WorkspaceActor and DealActor copy it):
 * - a command asks `propose(event)` for the next snapshot, a pure step of the machine;
 * - the registry has `persist` write it in the command's transaction, under the version;
 * - only after the commit does `apply` take it into memory.
 * Nothing here writes outside a command, and memory never runs ahead of the database.
 */
export class AgentActor implements PersistentActor<AgentSnapshot> {
  private snapshot: AgentSnapshot;
  version: number;
  /** The caller as handlers see it; made once, since every request of this agent needs it. */
  readonly principal: Principal;
  /** RFC 3339, made once: `whoami` shows it on every call. */
  readonly createdAt: string;

  constructor(
    readonly record: AgentRow,
    snapshot: AgentSnapshot,
    /** The feed's newest sequence number when loaded, to seed the change hub. */
    readonly lastSeqAtLoad: number,
  ) {
    this.snapshot = snapshot;
    this.version = record.version;
    this.principal = principalOf(record);
    this.createdAt = record.createdAt.toISOString();
  }

  get agentId(): string {
    return this.record.agentId;
  }

  get name(): string {
    return this.record.name;
  }

  /** The agent's remembered place in its changes feed. */
  get readSeq(): number {
    return this.snapshot.context.readSeq;
  }

  /** The snapshot after `event`, or undefined when the machine ignores it. Changes nothing. */
  propose(event: AgentEvent): AgentSnapshot | undefined {
    const [next] = transition(agentMachine, this.snapshot, event);
    return next === this.snapshot || next.context === this.snapshot.context ? undefined : next;
  }

  async persist(tx: Transaction, next: AgentSnapshot | undefined): Promise<number | null> {
    if (next === undefined) return this.version;
    return saveAgentState(tx, this.agentId, this.version, agentMachine.getPersistedSnapshot(next));
  }

  apply(next: AgentSnapshot | undefined, version: number): void {
    if (next !== undefined) this.snapshot = next;
    this.version = version;
  }
}

/** Loads an agent: its machine from its last saved snapshot, or new at its feed's read place. */
export async function loadAgentActor(db: Queryable, agentId: string): Promise<AgentActor | null> {
  const row = await findAgent(db, agentId);
  if (!row) return null;
  return new AgentActor(row, restore(row.machine, row.readSeq), row.lastSeq);
}

function restore(saved: unknown, readSeq: number): AgentSnapshot {
  // createActor with a snapshot is xstate's documented way back from a persisted snapshot; the
  // actor is only a vehicle here and is never started.
  const actor =
    saved === null || saved === undefined
      ? createActor(agentMachine, { input: { readSeq } })
      : createActor(agentMachine, { snapshot: saved as AgentSnapshot, input: { readSeq } });
  return actor.getSnapshot();
}
