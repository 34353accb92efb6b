import * as assert from 'uvu/assert';
import { agree, dealOf, dealRoom } from '../helpers/deals.ts';
import { serverSuite } from '../helpers/server-suite.ts';
import type { Agent } from '../helpers/wire-types.ts';

/**
 * An agreement makes the deal's row and records the agreement in two commands; they commit as
 * one (actors/kernel/commit.ts, allOrNothing). Bad luck is played by the database itself: a
 * trigger refuses every agreement row, as a full disk or a lost connection would.
 */
const test = serverSuite('deals: an agreement commits whole or not at all');

const REFUSE_AGREEMENTS = `
  create or replace function refuse_agreements() returns trigger language plpgsql as $$
  begin raise exception 'no agreement may be written now'; end $$;
  create trigger refuse_agreements before insert on deal_agreements
    for each row execute function refuse_agreements();`;
const ALLOW_AGREEMENTS = `
  drop trigger refuse_agreements on deal_agreements;
  drop function refuse_agreements();`;

test('a first agreement that fails to be written leaves no deal row behind, and the next one makes it', async ({
  server,
}) => {
  const { workspaceId, agents, at } = await dealRoom(server);
  const [first] = agents as [Agent, Agent];
  const db = server.services.driver;
  const dealRows = async () =>
    (
      await db.query<{ n: number }>(
        'select count(*)::int as n from deals where workspace_id = $1',
        [workspaceId],
      )
    )[0]?.n;
  await db.script(REFUSE_AGREEMENTS);
  try {
    const failed = await agree(server, first, workspaceId, 'deal.md', at);
    assert.is(failed.status, 500, JSON.stringify(failed.body));
  } finally {
    await db.script(ALLOW_AGREEMENTS);
  }
  assert.is(await dealRows(), 0, 'the deal row of the failed agreement is gone with it');
  const agreed = await agree(server, first, workspaceId, 'deal.md', at);
  assert.is(agreed.status, 200, JSON.stringify(agreed.body));
  assert.is(await dealRows(), 1);
  const deal = await dealOf(server, first, workspaceId, 'deal.md');
  assert.equal(
    deal.agreements.map((a: { agent_id: string }) => a.agent_id),
    [first.agent_id],
  );
});

test.run();
