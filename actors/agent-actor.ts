import { createActor, type Actor as XActor } from 'xstate';
import { agentMachine } from '../machines/agent.ts';
import type { AgentRow } from '../storage/agents.ts';
import { moveReadPlace } from '../storage/changes.ts';
import type { Driver } from '../storage/driver.ts';
import type { Actor } from './registry.ts';

/**
 * One agent, live: its record and its machine. Commands reach it through the registry's
 * mailbox, one at a time; each persists first and changes memory only after the commit.
 */
export class AgentActor implements Actor {
  private readonly machine: XActor<typeof agentMachine>;

  constructor(
    readonly record: AgentRow,
    readSeq: number,
    private readonly driver: Driver,
  ) {
    this.machine = createActor(agentMachine, { input: { readSeq } });
    // An unobserved actor error would crash the process later (STACK.md).
    this.machine.subscribe({ error: () => undefined });
    this.machine.start();
    this.createdAt = record.createdAt.toISOString();
  }

  /** RFC 3339, made once: `whoami` shows it on every call. */
  readonly createdAt: string;

  get agentId(): string {
    return this.record.agentId;
  }

  get name(): string {
    return this.record.name;
  }

  /** The agent as it appears on changes it causes. */
  get asActor(): { agent_id: string; name: string } {
    return { agent_id: this.record.agentId, name: this.record.name };
  }

  get readSeq(): number {
    return this.machine.getSnapshot().context.readSeq;
  }

  /** Moves the remembered place forward to `seq`; never backward. */
  async markRead(seq: number): Promise<void> {
    if (seq <= this.readSeq) return;
    await moveReadPlace(this.driver, this.record.agentId, seq);
    this.machine.send({ type: 'feed.read', seq });
  }

  dispose(): void {
    this.machine.stop();
  }
}
