import type { CapabilitySettings } from '../kernel/settings.ts';

declare module '../kernel/services.ts' {
  interface Services {
    /**
     * Whether agents' SQL runs as the reader role (start-up checks: setup.ts). Set by the
     * index's start-up step; false (unset) until then, as nothing queries before it.
     */
    indexReaderRole: boolean;
    /** PostgreSQL: the agents' pool logs in as a reader role of its own (no role to switch). */
    indexReaderLogin: boolean;
  }
}

declare module '../kernel/settings.ts' {
  interface CapabilityConfig {
    /** The time limit of one index SQL query; 0: the driver's default (queries.ts). */
    sqlTimeoutMs: number;
    /** Index queries that may run past that limit in any minute, per agent (0: no limit). */
    sqlTimeoutsPerAgent: number;
    /** The same for all agents together (0: no limit), so that many cannot do what one may not. */
    sqlTimeoutsTotal: number;
  }
}

/** What the index reads from the environment. */
export const indexSettings: CapabilitySettings = {
  rows: [
    {
      variables: ['SQL_TIMEOUT_MS'],
      default: '`2000` (PostgreSQL), `500` (PGlite)',
      meaning:
        'time limit of one index SQL query; heavy SQL use wants PostgreSQL (PGlite has one connection)',
    },
    {
      variables: ['SQL_TIMEOUTS_PER_AGENT'],
      default: '`3`',
      meaning: 'index SQL timeouts one agent may cause a minute before `429` (0: no limit)',
    },
    {
      variables: ['SQL_TIMEOUTS_TOTAL'],
      default: '`30`',
      meaning:
        'index SQL timeouts all agents together may cause a minute before `429` (0: no limit)',
    },
  ],
  read: (env) => ({
    sqlTimeoutMs: env.integer('SQL_TIMEOUT_MS', 0),
    sqlTimeoutsPerAgent: env.integer('SQL_TIMEOUTS_PER_AGENT', 3),
    sqlTimeoutsTotal: env.integer('SQL_TIMEOUTS_TOTAL', 30),
  }),
  services: (config) => ({
    sqlTimeoutMs: config.sqlTimeoutMs,
    sqlTimeoutLimits: { perAgent: config.sqlTimeoutsPerAgent, total: config.sqlTimeoutsTotal },
  }),
};
