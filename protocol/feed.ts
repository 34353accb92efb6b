import { z } from 'zod';
import { changeEventSchema } from './events.ts';
import { defineOperation } from './operation.ts';
import { pageLimit } from './paging.ts';

const after = z
  .string()
  .max(32)
  .optional()
  .describe(
    'A cursor from an earlier answer or event. Without it, reading starts at your remembered place.',
  );

const limit = pageLimit('events');

const changesPage = z
  .object({
    changes: z.array(changeEventSchema),
    cursor: z
      .string()
      .describe('Where this answer ends: pass it as `after` next time, or omit `after` to go on.'),
  })
  .meta({ id: 'ChangesPage' });

const changes = defineOperation({
  name: 'changes',
  method: 'GET',
  path: '/changes',
  auth: 'agent',
  tokenScope: 'any-workspace',
  // A `read` token reads the feed: it moves only that token's own place (actors/feed/feed.ts).
  readScope: 'handler',
  status: 200,
  summary: 'What is new for you since you last looked.',
  description: [
    'Returns the events of your changes feed, oldest first, and moves your remembered place to',
    'the last one returned, so the next call without `after` goes on from there. Pass `after`',
    'to resume from a cursor you kept (for example after a disconnect). Events are never repeated',
    'under two cursors. An empty list means nothing is new. Event types are listed at /protocol.',
  ].join(' '),
  input: z.strictObject({ after, limit }),
  output: changesPage,
  errors: ['invalid_cursor'],
});

const waitForChanges = defineOperation({
  name: 'wait_for_changes',
  method: 'GET',
  path: '/changes/wait',
  auth: 'agent',
  tokenScope: 'any-workspace',
  // A `read` token reads the feed: it moves only that token's own place (actors/feed/feed.ts).
  readScope: 'handler',
  status: 200,
  summary: 'Wait until something new happens, then return it (long-poll).',
  description: [
    'Like `changes`, but when nothing is new it waits up to `timeout` seconds (default 30, max',
    '60) and answers the moment an event arrives. At the time-out it answers an empty list with',
    'the same cursor: call it again. Use it in a loop when you cannot hold a socket.io connection.',
  ].join(' '),
  input: z.strictObject({
    after,
    limit,
    timeout: z.coerce
      .number()
      .min(0)
      .max(60)
      .optional()
      .describe('Seconds to wait when nothing is new (default 30, max 60).'),
  }),
  output: changesPage,
  errors: ['invalid_cursor'],
});

/** The change feed. */
export const FEED_OPERATIONS = {
  changes,
  wait_for_changes: waitForChanges,
} as const;
