import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Driver } from '../../storage/driver.ts';
import { findPayment } from '../../storage/payments/payments.ts';
import { databaseBeforeMigration } from '../helpers/migrations.ts';
import { driverKinds } from '../helpers/storage.ts';

/**
 * Migration 037 gives the payments requested before it the block after which a transfer may
 * credit them: the watcher's cursor on their chain (every block up to it was read already), at
 * most the block before a credited payment's own transfer (so a reorg may credit it again), and
 * none at all where the watcher never ran on the chain (then no transfer credits it).
 */
const test = suite('migration 037 bounds the payments requested before it');

const ADDRESS = `0x${'ab'.repeat(20)}`;

/** A payment as a version before 037 wrote it (no requested_at_block), in a deal of its own. */
async function oldPayment(
  driver: Driver,
  chainId: number,
  status: string,
  machine: unknown,
): Promise<string> {
  const [payer, payee, workspaceId, dealId, paymentId] = Array.from({ length: 5 }, randomUUID);
  await driver.transaction(async (tx) => {
    for (const agentId of [payer, payee]) {
      await tx.query('insert into agents (agent_id, name) values ($1, $2)', [agentId, agentId]);
    }
    await tx.query(
      `insert into workspaces (workspace_id, owner_agent_id, visibility) values ($1, $2, 'private')`,
      [workspaceId, payee],
    );
    await tx.query(
      `insert into deals (deal_id, workspace_id, path, status, machine, created_at)
       values ($1, $2, 'deal.md', 'agreed', '{}', now())`,
      [dealId, workspaceId],
    );
    await tx.query(
      `insert into payments (payment_id, deal_id, workspace_id, payer_agent_id, payee_agent_id,
         memo, amount_units, payee_address, chain_id, token_address, status, machine,
         created_at, expires_at)
       values ($1, $2, $3, $4, $5, 'memo', 7000000, $6, $7, $6, $8, $9::text::jsonb,
         now(), now() + interval '7 days')`,
      [
        paymentId,
        dealId,
        workspaceId,
        payer,
        payee,
        ADDRESS,
        chainId,
        status,
        JSON.stringify(machine),
      ],
    );
  });
  return paymentId as string;
}

for (const kind of driverKinds()) {
  test(`on ${kind}, each payment gets the cursor, the block before its own transfer, or none`, async () => {
    const { driver, migrate, drop } = await databaseBeforeMigration(kind, 37);
    try {
      await driver.query('insert into chain_cursor (chain_id, last_block) values (8453, 5000)');
      const requested = await oldPayment(driver, 8453, 'requested', { value: 'requested' });
      const seenBelow = await oldPayment(driver, 8453, 'seen', {
        value: 'seen',
        context: { evidence: { block_number: 4200 } },
      });
      const seenAbove = await oldPayment(driver, 8453, 'confirmed', {
        value: 'confirmed',
        context: { evidence: { block_number: 6000 } },
      });
      const unwatched = await oldPayment(driver, 84532, 'requested', { value: 'requested' });
      await migrate();
      const bound = async (id: string) => (await findPayment(driver, id))?.requestedAtBlock;
      assert.is(await bound(requested), 5000);
      assert.is(await bound(seenBelow), 4199);
      assert.is(await bound(seenAbove), 5000);
      assert.is(await bound(unwatched), null);
    } finally {
      await drop();
    }
  });
}

test.run();
