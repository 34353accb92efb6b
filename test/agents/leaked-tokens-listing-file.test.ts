import * as assert from 'uvu/assert';
import { callJson } from '../helpers/http.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { Agent } from '../helpers/wire-types.ts';
import { saveFile } from '../helpers/workspaces.ts';

/**
 * A listing's file written again by another door than post_listing (a plain PUT) is still the
 * listing: the store's save hook records it, and the leaked-token revocation, which runs after
 * it, reports a token found there as the listing's, not as a file's.
 */

const test = serverSuite('a token leaked in a listing file is reported as the listing');

test("a live token PUT into an existing listing's file is revoked and reported as the listing", async ({
  server,
}) => {
  const owner = (await server.signUp()) as Agent;
  const made = await callJson<{ api_token: string; token_id: string }>(
    server,
    'POST',
    '/whoami/tokens',
    owner.api_token,
    { name: 'deploy key' },
  );
  assert.is(made.status, 201, JSON.stringify(made.body));
  const author = (await server.signUp()) as Agent;
  const posted = await callJson<{ listing_id: string; workspace_id: string; path: string }>(
    server,
    'POST',
    '/listings',
    author.api_token,
    { kind: 'can', name: 'Deploys', description: 'I deploy things', can: 'deploys' },
  );
  assert.is(posted.status, 201, JSON.stringify(posted.body));
  const { listing_id, workspace_id, path } = posted.body;
  const file = await server.get(`/workspaces/${workspace_id}/files/${path}`, author.api_token);
  assert.is(file.status, 200);
  await saveFile(
    server,
    author,
    workspace_id,
    path,
    `${await file.text()}\nI deploy with ${made.body.api_token} (oops)\n`,
  );

  const whoami = await callJson<{ reason?: string }>(server, 'GET', '/whoami', made.body.api_token);
  assert.is(whoami.status, 401, 'revoked before the PUT answered');
  assert.is(whoami.body.reason, 'revoked');
  const feed = await callJson<{ changes: { type: string; data: Record<string, unknown> }[] }>(
    server,
    'GET',
    '/changes?after=c0&limit=500',
    owner.api_token,
  );
  assert.is(feed.status, 200, JSON.stringify(feed.body));
  assert.equal(
    feed.body.changes.filter((change) => change.type === 'token.revoked').map((c) => c.data),
    [
      {
        token_id: made.body.token_id,
        name: 'deploy key',
        reason: 'leaked',
        found_in: { kind: 'listing', listing_id, workspace_id },
      },
    ],
  );
});

test.run();
