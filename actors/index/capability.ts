import { versionIsIndexedSql } from '../../storage/index/read-versions.ts';
import { addSaveHook } from '../files/save-hooks.ts';
import type { Capability } from '../kernel/capability.ts';
import { queryIndex } from './handlers.ts';
import { indexSaveHook } from './save-hook.ts';
import { prepareIndex } from './setup.ts';
import { indexSettings } from './settings.ts';

declare module '../kernel/services.ts' {
  interface ServiceConfig {
    /** The time limit of one index SQL query (SQL_TIMEOUT_MS); unset or 0: queries.ts decides. */
    sqlTimeoutMs?: number;
    /** Index queries past that limit allowed a minute (sql-timeout-budget.ts). */
    sqlTimeoutLimits?: { perAgent: number; total: number };
  }
}
/** The index: what markdown files' YAML headers say, queried in read-only SQL. */
export const index = {
  name: 'index',
  settings: indexSettings,
  handlers: { query_index: queryIndex },
  async startUp(services, log) {
    // A save lets go of older versions the index did not read (actors/files/provided-sql.ts).
    services.provide('versionIsIndexedSql', versionIsIndexedSql);
    await prepareIndex(services, log);
    addSaveHook(services, indexSaveHook);
  },
} satisfies Capability;
