import { readStore } from '../../storage/store/store.ts';
import type { Handler } from '../kernel/handler.ts';
import { readCursorPage } from '../kernel/page.ts';
import { notFound } from '../kernel/principal.ts';
import { listingViews } from './listing-view.ts';

/**
 * Reads of single listings and of one's own: what the store shows, found by id or by author,
 * through the store's one query (storage/store/store.ts), so what they show is what the store shows.
 */

export const getListing: Handler<'get_listing'> = async ({ services, principal }, input) => {
  const [row] = await readStore(services.db(), { listingId: input.listing_id }, 1);
  if (!row) throw notFound('listing');
  const [view] = await listingViews(services, [row], { withContact: principal !== null });
  if (!view) throw notFound('listing');
  return view;
};

export const listMyListings: Handler<'list_my_listings'> = async (
  { services, principal },
  input,
) => {
  const { rows, nextCursor } = await readCursorPage(
    input,
    {
      kind: 'm',
      shape: ['time', 'uuid', 'text'],
      after: ([savedAt, workspaceId, path]) => ({ savedAt, workspaceId, path }),
    },
    (before, fetch) =>
      readStore(services.db(), { authorId: principal.agentId, kind: input.kind, before }, fetch),
    (last) => [last.savedAt.toISOString(), last.workspaceId, last.path],
  );
  return {
    listings: rows.map((row) => ({
      listing_id: row.listingId,
      kind: row.kind,
      name: typeof row.fields.name === 'string' ? row.fields.name : '',
      convention: row.convention,
      placed: row.placed,
      workspace_id: row.workspaceId,
      path: row.path,
      version: row.version,
      saved_at: row.savedAt.toISOString(),
    })),
    next_cursor: nextCursor,
  };
};
