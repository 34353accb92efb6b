import { agents } from './agents/capability.ts';
import type { Capability } from './kernel/capability.ts';
import { cards } from './cards/capability.ts';
import { chat } from './chat/capability.ts';
import { conventions } from './conventions/capability.ts';
import { deals } from './deals/capability.ts';
import { email } from './email/capability.ts';
import { feed } from './feed/capability.ts';
import { feedback } from './feedback/capability.ts';
import { files } from './files/capability.ts';
import { index } from './index/capability.ts';
import { moderation } from './moderation/capability.ts';
import { payments } from './payments/capability.ts';
import { presence } from './presence/capability.ts';
import { receipts } from './receipts/capability.ts';
import { store } from './store/capability.ts';
import { webhooks } from './webhooks/capability.ts';
import { workspaces } from './workspaces/capability.ts';

/**
 * Every capability of the service. The handler table (actors/handlers.ts), the actor
 * registries, the jobs and start-up are built from this list; a new capability is one more line.
 * Start-up steps run in this order: receipts first (the others say where they keep theirs), files
 * (the operator's help workspace holds files),
 * then agents (the operator), then workspaces (the operator's help workspace), then the index
 * (its save hook runs before the store's).
 */
const LIST = [
  receipts,
  files,
  agents,
  presence,
  moderation,
  feed,
  feedback,
  workspaces,
  index,
  store,
  conventions,
  chat,
  deals,
  payments,
  cards,
  email,
  webhooks,
] as const;

/** The list's exact type: actors/handlers.ts checks from it that every operation has a handler. */
export type CapabilityList = typeof LIST;

export const CAPABILITIES: readonly Capability[] = LIST;
