import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { appendReceipt } from '../../actors/receipts/chain.ts';
import { receiptHash, signReceipt, type SignedReceipt } from '../../actors/receipts/receipts.ts';
import { SigningKeys } from '../../actors/receipts/signing-keys.ts';
import { insertAgent } from '../../storage/agents/agents.ts';
import type { Driver } from '../../storage/driver.ts';
import { insertWorkspace } from '../../storage/workspaces/workspaces.ts';
import { driverKinds, openTestDriver } from '../helpers/storage.ts';
import { driverSuite } from '../storage/contract.ts';

/**
 * A workspace's receipt chain (actors/receipts/chain.ts) on a real database: what is appended
 * is exactly what signing the content after the newest receipt gives, and the chain orders
 * itself whoever appends, also from two transactions at once.
 */

interface Context {
  driver: Driver;
  keys: SigningKeys;
}

/** A new workspace (and its owner) with no receipt yet. */
async function newWorkspace(driver: Driver): Promise<string> {
  const agentId = randomUUID();
  const workspaceId = randomUUID();
  await driver.transaction(async (tx) => {
    await insertAgent(tx, { agentId, name: `owner ${agentId}` });
    await insertWorkspace(tx, {
      workspaceId,
      ownerAgentId: agentId,
      visibility: 'private',
      name: null,
    });
  });
  return workspaceId;
}

const fileReceipt = (workspaceId: string, version: number) => ({
  receipt_id: randomUUID(),
  workspace_id: workspaceId,
  path: 'notes/a.md',
  action: 'save',
  version,
  size: 3,
  sha256: 'a'.repeat(64),
  agent_id: randomUUID(),
  agent_name: 'writer',
  saved_at: new Date(Date.UTC(2030, 0, 1, 0, 0, version)).toISOString(),
});

const rating = (workspaceId: string) => ({
  receipt_id: randomUUID(),
  action: 'rate',
  workspace_id: workspaceId,
  deal_id: randomUUID(),
  rater: randomUUID(),
  ratee: randomUUID(),
  delivered_can: true,
  accepted_on_need: true,
  score: 5,
  comment: null,
  payment_backed: false,
  agent_name: 'rater',
  at: new Date(Date.UTC(2030, 0, 2)).toISOString(),
});

const lastReceipt = async (driver: Driver, workspaceId: string) =>
  (
    await driver.query<{ last_receipt: unknown }>(
      'select last_receipt from workspaces where workspace_id = $1',
      [workspaceId],
    )
  )[0]?.last_receipt;

for (const kind of driverKinds()) {
  const test = driverSuite<Context>(kind, `the receipt chain on ${kind}`);

  test.before(async (context) => {
    context.driver = await openTestDriver(kind);
    context.keys = new SigningKeys();
    await context.keys.start(context.driver);
  });
  test.after(async ({ driver }) => {
    await driver.close();
  });

  test('file and deal receipts appended to a workspace form one line, each signed exactly as signReceipt signs it', async ({
    driver,
    keys,
  }) => {
    const workspaceId = await newWorkspace(driver);
    const key = await keys.current(driver);
    const contents = [
      fileReceipt(workspaceId, 1),
      rating(workspaceId),
      fileReceipt(workspaceId, 2),
    ];
    const appended: SignedReceipt[] = [];
    for (const content of contents) {
      appended.push(
        await driver.transaction((tx) => appendReceipt(tx, keys, workspaceId, content)),
      );
    }
    let previous: SignedReceipt | null = null;
    for (const [i, receipt] of appended.entries()) {
      const expected = signReceipt(contents[i] as object, previous, key);
      assert.is(JSON.stringify(receipt), JSON.stringify(expected), `receipt ${i}, byte for byte`);
      assert.is(receipt.prev_hash, previous ? receiptHash(previous) : null);
      previous = receipt;
    }
    assert.equal(await lastReceipt(driver, workspaceId), appended.at(-1), 'the newest is kept');
    assert.equal(
      await lastReceipt(driver, await newWorkspace(driver)),
      null,
      'another workspace has a chain of its own',
    );
  });

  test('a receipt appended in a transaction that rolls back leaves the chain as it was', async ({
    driver,
    keys,
  }) => {
    const workspaceId = await newWorkspace(driver);
    const kept = await driver.transaction((tx) =>
      appendReceipt(tx, keys, workspaceId, fileReceipt(workspaceId, 1)),
    );
    const refused = await driver
      .transaction(async (tx) => {
        await appendReceipt(tx, keys, workspaceId, fileReceipt(workspaceId, 2));
        throw new Error('refused after appending');
      })
      .catch((error: unknown) => error);
    assert.instance(refused, Error);
    assert.equal(await lastReceipt(driver, workspaceId), kept);
    const next = await driver.transaction((tx) =>
      appendReceipt(tx, keys, workspaceId, fileReceipt(workspaceId, 2)),
    );
    assert.is(next.prev_hash, receiptHash(kept));
  });

  if (kind === 'postgres') {
    test('two transactions appending to one workspace at once: the second waits and chains after the first', async ({
      driver,
      keys,
    }) => {
      const workspaceId = await newWorkspace(driver);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let appended!: () => void;
      const firstAppended = new Promise<void>((resolve) => (appended = resolve));
      // No lock taken beforehand, as a caller that knows nothing of the chain's order.
      const first = driver.transaction(async (tx) => {
        const receipt = await appendReceipt(tx, keys, workspaceId, fileReceipt(workspaceId, 1));
        appended();
        await held;
        return receipt;
      });
      await firstAppended;
      let secondSettled = false;
      const second = driver
        .transaction((tx) => appendReceipt(tx, keys, workspaceId, rating(workspaceId)))
        .finally(() => (secondSettled = true));
      // The first commits only once the second has read the chain's end or waits on a lock.
      for (;;) {
        if (secondSettled) break;
        const [row] = await driver.query<{ waiting: number }>(
          `select count(*)::int as waiting from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock'`,
        );
        if ((row?.waiting ?? 0) > 0) break;
      }
      release();
      const [one, two] = await Promise.all([first, second]);
      assert.is(two.prev_hash, receiptHash(one), 'the second follows the first: no fork');
      assert.equal(await lastReceipt(driver, workspaceId), two);
    });
  }

  test.run();
}
