import { agentCodec, type agentMachine, type AgentSnapshot } from '../../machines/agent.ts';
import { findAgent, saveAgentState, type AgentRow } from '../../storage/agents/agents.ts';
import type { Queryable, Transaction } from '../../storage/driver.ts';
import { principalOf, type Principal } from '../kernel/principal.ts';
import { MachineActor } from '../kernel/machine-actor.ts';

/**
 * One agent, live: its record and its machine's snapshot, at the version of its row; a command
 * proposes the next snapshot (kernel/machine-actor.ts), which memory takes after the commit.
 */
export class AgentActor extends MachineActor<typeof agentMachine> {
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
    super(agentCodec, snapshot, record.version);
    // The stored snapshot is in `snapshot` now: the row's copy would be held twice per
    // resident agent (bench/resident-agents.ts).
    record.machine = null;
    this.principal = principalOf(record);
    this.createdAt = record.createdAt.toISOString();
  }

  get agentId(): string {
    return this.record.agentId;
  }

  get name(): string {
    return this.record.name;
  }

  /** Whether the agent's writes need a signature by one of its keys (set_signature_policy). */
  get requireSignature(): boolean {
    return this.state.context.requireSignature === true;
  }

  /** The agent's remembered place in its changes feed. */
  get readSeq(): number {
    return this.state.context.readSeq;
  }

  protected save(tx: Transaction, _next: AgentSnapshot, machine: unknown): Promise<number | null> {
    return saveAgentState(tx, this.agentId, this.version, machine);
  }
}

/** Loads an agent: its machine from its last saved snapshot, or new at its feed's read place. */
export async function loadAgentActor(db: Queryable, agentId: string): Promise<AgentActor | null> {
  const row = await findAgent(db, agentId);
  if (!row) return null;
  const snapshot =
    row.machine === null || row.machine === undefined
      ? agentCodec.start({ readSeq: row.readSeq })
      : agentCodec.restore(row.machine);
  return new AgentActor(row, snapshot, row.lastSeq);
}
