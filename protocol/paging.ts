import { z } from 'zod';

/** The most items one page of any list holds (protocol/documents/protocol.md, "Pagination"). */
export const MAX_PAGE_LIMIT = 500;

/** `?limit=` of every paginated list (protocol.md: default 50, max 500); `what` names the items. */
export function pageLimit(what: string) {
  return z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_PAGE_LIMIT)
    .optional()
    .describe(`How many ${what} at most (default 50, max 500).`);
}

/** `?cursor=` of every paginated list but the changes feed (which pages by `after`). */
export const pageCursor = z
  .string()
  .max(200)
  .optional()
  .describe('The `next_cursor` of the previous page; leave it out for the first page.');
