import type { Queryable } from '../../../storage/driver.ts';
import type { Services } from '../../kernel/services.ts';

/** The current names of things of one kind, by id; an id with no name is left out. */
export type NamesById = (db: Queryable, ids: readonly string[]) => Promise<Map<string, string>>;

/**
 * The names a digest shows: agents' and workspaces' current names. Both capabilities build on
 * email (workspaces mail invites; agents build on files, which build on workspaces), so email
 * imports nothing of them: each fills its port at start-up (`services.provide`) with the reader
 * its storage exports. Read there rather than through their actors: a digest reads many at once
 * and changes none.
 */
declare module '../../kernel/services.ts' {
  interface Services {
    /** Agents' names by id: the agents capability's agentNames. */
    readonly agentNames: NamesById;
    /** Workspaces' names by id (a workspace may have none): the workspaces capability's. */
    readonly workspaceNames: NamesById;
  }
}

/** The names of the agents and workspaces the digest names, by id, in one map. */
export async function digestNames(
  db: Queryable,
  services: Services,
  ids: { agents: readonly string[]; workspaces: readonly string[] },
): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  if (ids.agents.length > 0) {
    for (const [id, name] of await services.agentNames(db, ids.agents)) names.set(id, name);
  }
  if (ids.workspaces.length > 0) {
    for (const [id, name] of await services.workspaceNames(db, ids.workspaces)) {
      names.set(id, name);
    }
  }
  return names;
}
