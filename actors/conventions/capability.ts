import { lockConvention } from '../../storage/conventions/conventions.ts';
import type { Capability } from '../kernel/capability.ts';
import type { ActorRegistry } from '../kernel/registry.ts';
import { loadConventionActor, type ConventionActor } from './actor.ts';
import {
  getConvention,
  listConventions,
  placeConvention,
  refuseConvention,
  registerConvention,
  relateConventions,
} from './handlers.ts';
import { conventionsSettings } from './settings.ts';

declare module '../kernel/services.ts' {
  interface ServiceConfig {
    /** Conventions one agent may register in all (CONVENTIONS_PER_AGENT; default 20, 0: none). */
    conventionsPerAgent?: number;
  }
  interface Services {
    /** Every convention, live while in use: its machine (proposed, placed, refused...). */
    readonly conventions: ActorRegistry<ConventionActor>;
  }
}

/** Conventions: the shared shapes of listings, registered, placed, refused and related. */
export const conventions = {
  name: 'conventions',
  settings: conventionsSettings,
  handlers: {
    list_conventions: listConventions,
    get_convention: getConvention,
    register_convention: registerConvention,
    place_convention: placeConvention,
    refuse_convention: refuseConvention,
    relate_conventions: relateConventions,
  },
  actors: [
    {
      kind: 'convention',
      registry: 'conventions',
      load: (name, db) => loadConventionActor(db, name),
      lock: (name, tx) => lockConvention(tx, name),
    },
  ],
} satisfies Capability;
