import type { AgentNameSql, VersionIsIndexedSql } from '../../storage/files/files.ts';

/**
 * What files read of the capabilities built on them, in their own statements: agents and the
 * index build on files (each registers a save hook), so files import nothing of either. Each fills
 * its port at start-up (`services.provide`) with the SQL its storage exports for it.
 */
declare module '../kernel/services.ts' {
  interface Services {
    /** Who saved a version, by name (list_files): the agents capability's agentNameSql. */
    readonly agentNameSql: AgentNameSql;
    /**
     * Whether the index read a version, which then keeps its bytes past its time as current (rule
     * `every_kept_byte`): the index capability's versionIsIndexedSql.
     */
    readonly versionIsIndexedSql: VersionIsIndexedSql;
  }
}
