import { randomUUID } from 'node:crypto';
import { ServiceError } from '../../protocol/errors.ts';
import { MAX_WATCHES } from '../../protocol/store.ts';
import {
  deleteWatchRow,
  insertWatch,
  listWatchRows,
  type WatchRow,
} from '../../storage/store/listings.ts';
import { notFound } from '../kernel/principal.ts';
import type { Handler } from '../kernel/handler.ts';

/**
 * The operations on an agent's watches of the store: each is a command of the agent (its row
 * lock), and an agent holds at most MAX_WATCHES. What a watch hears is in ./watches.ts.
 */

function watchView(row: WatchRow) {
  return {
    watch_id: row.watchId,
    convention: row.convention,
    kind: row.kind,
    axis: row.axis,
    value: row.value,
    q: row.q,
    match_my_listings: row.matchMyListings,
    created_at: row.createdAt.toISOString(),
  };
}

export const watchListings: Handler<'watch_listings'> = async ({ services, principal }, input) => {
  const followsMine = input.match_my_listings === true;
  const criteria = (['convention', 'kind', 'axis', 'value', 'q'] as const).filter(
    (key) => input[key] !== undefined,
  );
  if (followsMine && criteria.length > 0) {
    throw new ServiceError(
      'invalid_input',
      `match_my_listings follows your own listings and takes no other criterion: leave out ${criteria.join(', ')} (or make a second watch).`,
      { field: criteria[0] },
    );
  }
  if ((input.axis === undefined) !== (input.value === undefined)) {
    throw new ServiceError(
      'invalid_input',
      '`axis` and `value` come together: axis place, value Berlin.',
      {
        field: input.axis === undefined ? 'axis' : 'value',
      },
    );
  }
  if (
    !followsMine &&
    input.convention === undefined &&
    input.kind === undefined &&
    input.axis === undefined &&
    input.q === undefined
  ) {
    throw new ServiceError(
      'invalid_input',
      'A watch needs at least one of convention, kind, axis and value, q; or match_my_listings: true.',
      {
        field: 'convention',
      },
    );
  }
  const row: WatchRow = {
    watchId: randomUUID(),
    agentId: principal.agentId,
    convention: input.convention ?? null,
    kind: input.kind ?? null,
    axis: input.axis ?? null,
    value: input.value ?? null,
    q: input.q ?? null,
    matchMyListings: followsMine,
    createdAt: new Date(services.clock.now()),
  };
  const saved = await services.agents.command(principal.agentId, async (_agent, tx) => ({
    result: await insertWatch(tx, row, MAX_WATCHES),
  }));
  if (saved === false) {
    throw new ServiceError(
      'limit_reached',
      `You hold ${MAX_WATCHES} watches, the most one agent may: delete one first.`,
      {
        limit: MAX_WATCHES,
      },
    );
  }
  return watchView(row);
};

export const listWatches: Handler<'list_watches'> = async ({ services, principal }) => ({
  watches: (await listWatchRows(services.db(), principal.agentId)).map(watchView),
});

export const deleteWatch: Handler<'delete_watch'> = async ({ services, principal }, input) => {
  const deleted = await services.agents.command(principal.agentId, async (_agent, tx) => ({
    result: await deleteWatchRow(tx, principal.agentId, input.watch_id),
  }));
  if (!deleted) throw notFound('watch');
  return { watch_id: input.watch_id, deleted: true as const };
};
