import {
  bumpWorkspace,
  findWorkspace,
  type AgentNameSql,
  type MemberRow,
  type Role,
  type WorkspaceRow,
} from '../../storage/workspaces/workspaces.ts';
import type { Queryable, Transaction } from '../../storage/driver.ts';
import type { Principal } from '../kernel/principal.ts';
import type { PersistentActor } from '../kernel/registry.ts';

/** A workspace's state in memory: who belongs to it. */
export interface WorkspaceState {
  members: readonly MemberRow[];
}

/**
 * One workspace, live: its record and its members, at the version of its row. Built as the
 * AgentActor is (docs/architecture.md): a command proposes the next state, the registry
 * persists it under the version in the command's transaction, and memory takes it only after
 * the commit. Its invites and files are rows its commands read and write in their
 * transaction; only what every request needs (the members) is kept in memory.
 *
 * Only a change of members moves the row's version (and so makes other processes drop their
 * copies). File commands propose no next state: every workspace command runs holding the row
 * lock (the registry takes it first), which orders version numbers and the receipt chain
 * (actors/receipts/chain.ts).
 */
export class WorkspaceActor implements PersistentActor<WorkspaceState> {
  version: number;
  private state: WorkspaceState;
  private roles: Map<string, Role>;

  constructor(
    readonly record: WorkspaceRow,
    members: readonly MemberRow[],
  ) {
    this.version = record.version;
    this.state = { members };
    this.roles = rolesOf(members);
  }

  get workspaceId(): string {
    return this.record.workspaceId;
  }

  get members(): readonly MemberRow[] {
    return this.state.members;
  }

  roleOf(agentId: string): Role | undefined {
    return this.roles.get(agentId);
  }

  /** Private: members only. Public: every signed-up agent. */
  canRead(principal: Principal): boolean {
    return this.record.visibility === 'public' || this.roles.has(principal.agentId);
  }

  /**
   * Who may change it (save and delete files, invite): in a private workspace its members, in a
   * public one its owner.
   */
  canChange(principal: Principal): boolean {
    const role = this.roles.get(principal.agentId);
    return this.record.visibility === 'public' ? role === 'owner' : role !== undefined;
  }

  /** The state with `member` added (undefined when already a member: nothing to change). */
  withMember(member: MemberRow): WorkspaceState | undefined {
    if (this.roles.has(member.agentId)) return undefined;
    return { members: [...this.state.members, member] };
  }

  /** The state without `agentId` (undefined when not a member: nothing to change). */
  withoutMember(agentId: string): WorkspaceState | undefined {
    if (!this.roles.has(agentId)) return undefined;
    return { members: this.state.members.filter((member) => member.agentId !== agentId) };
  }

  async persist(tx: Transaction, next: WorkspaceState | undefined): Promise<number | null> {
    if (next === undefined) return this.version;
    return bumpWorkspace(tx, this.workspaceId, this.version);
  }

  apply(next: WorkspaceState | undefined, version: number): void {
    if (next !== undefined) {
      this.state = next;
      this.roles = rolesOf(next.members);
    }
    this.version = version;
  }
}

function rolesOf(members: readonly MemberRow[]): Map<string, Role> {
  return new Map(members.map((member) => [member.agentId, member.role]));
}

export async function loadWorkspaceActor(
  db: Queryable,
  workspaceId: string,
  agentNameSql: AgentNameSql,
): Promise<WorkspaceActor | null> {
  const found = await findWorkspace(db, workspaceId, agentNameSql);
  return found ? new WorkspaceActor(found.workspace, found.members) : null;
}
