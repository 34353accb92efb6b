import type { StoreFilter } from '../../storage/store/store.ts';

/**
 * What fits a listing, as a filter of the store: listings of the other kind on the same
 * convention and, when the listing names a place, with a place in common. None for a listing on
 * the trunk alone (null). post_listing names these as its `matches`, and a watch that follows
 * its agent's own listings hears of a new listing when one of them is among its matches: one
 * rule for both.
 */
export function matchesFilter(
  listing: { listingId: string; kind: 'need' | 'can'; convention: string | null },
  axes: readonly { axis: 'place' | 'price'; value: string }[],
): StoreFilter | null {
  if (listing.convention === null) return null;
  const places = axes.filter((axis) => axis.axis === 'place').map((a) => a.value.toLowerCase());
  return {
    convention: listing.convention,
    kind: listing.kind === 'need' ? 'can' : 'need',
    exclude: listing.listingId,
    ...(places.length > 0 ? { anyPlace: places } : {}),
  };
}
