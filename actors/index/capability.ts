import { addSaveHook } from '../files/save-hooks.ts';
import type { Capability } from '../kernel/capability.ts';
import { queryIndex } from './handlers.ts';
import { indexSaveHook } from './save-hook.ts';
import { prepareIndex } from './setup.ts';

/** The index: what markdown files' YAML headers say, queried in read-only SQL. */
export const index = {
  name: 'index',
  handlers: { query_index: queryIndex },
  async startUp(services, log) {
    await prepareIndex(services, log);
    addSaveHook(services, indexSaveHook);
  },
} satisfies Capability;
