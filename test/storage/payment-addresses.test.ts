import { randomInt, randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { insertAgent } from '../../storage/agents/agents.ts';
import { ensureDeal } from '../../storage/deals/deals.ts';
import type { Driver } from '../../storage/driver.ts';
import {
  insertPayment,
  lockPayment,
  openPaymentAddresses,
  updatePayment,
  type NewPayment,
} from '../../storage/payments/payments.ts';
import { upsertPayoutAddress } from '../../storage/payments/payout-addresses.ts';
import { unreadOnJoinSql } from '../../storage/chat.ts';
import { insertMember, insertWorkspace } from '../../storage/workspaces/workspaces.ts';
import { driverKinds, openTestDriver, type DriverKind } from '../helpers/storage.ts';
import { driverSuite } from './contract.ts';

/**
 * openPaymentAddresses on each driver: what the chain watcher reads transfers to. The deposit
 * address of each requested payment, and the payee address of each requested payment whose
 * payer has a payout address (a transfer to a payee counts only from there); lower-case,
 * distinct, of one chain, paged in order; nothing of payments no longer requested.
 */
const T0 = new Date(Date.UTC(2030, 0, 1));
let addressCount = 1;
const freshAddress = () => `0xDeF${(addressCount++).toString(16).padStart(37, '0')}`;

async function dealOfTwo(driver: Driver, payerHasPayout: boolean) {
  const payer = randomUUID();
  const payee = randomUUID();
  const workspaceId = randomUUID();
  const dealId = randomUUID();
  await driver.transaction(async (tx) => {
    await insertAgent(tx, { agentId: payer, name: `payer ${payer}` });
    await insertAgent(tx, { agentId: payee, name: `payee ${payee}` });
    await insertWorkspace(tx, {
      workspaceId,
      ownerAgentId: payee,
      visibility: 'private',
      name: null,
    });
    await insertMember(tx, workspaceId, payer, 'member', unreadOnJoinSql);
    await ensureDeal(tx, { dealId, workspaceId, path: 'deal.md', machine: {}, createdAt: T0 });
    if (payerHasPayout) {
      await upsertPayoutAddress(tx, {
        agentId: payer,
        address: freshAddress(),
        signature: '0x00',
        verifiedAt: T0,
      });
    }
  });
  return { payer, payee, workspaceId, dealId };
}

async function pay(
  driver: Driver,
  deal: Awaited<ReturnType<typeof dealOfTwo>>,
  chainId: number,
  addresses: { payee: string; deposit: string | null },
): Promise<NewPayment> {
  const row: NewPayment = {
    paymentId: randomUUID(),
    dealId: deal.dealId,
    workspaceId: deal.workspaceId,
    payerAgentId: deal.payer,
    payeeAgentId: deal.payee,
    memo: `memo ${randomUUID()}`,
    amountUnits: 1_000_000n,
    payeeAddress: addresses.payee,
    depositAddress: addresses.deposit,
    depositSalt: addresses.deposit && `0x${'cd'.repeat(32)}`,
    chainId,
    tokenAddress: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    machine: { value: 'requested' },
    createdAt: T0,
    expiresAt: new Date(T0.getTime() + 86_400_000),
  };
  assert.ok(await driver.transaction((tx) => insertPayment(tx, row)));
  return row;
}

async function allPages(driver: Driver, chainId: number, limit: number): Promise<string[]> {
  const all: string[] = [];
  for (let after: string | null = null; ;) {
    const page = await openPaymentAddresses(driver, chainId, after, limit);
    assert.ok(page.length <= limit);
    all.push(...page);
    if (page.length < limit) return all;
    after = page[page.length - 1] ?? null;
  }
}

function addressesSuite(kind: DriverKind) {
  const test = driverSuite<{ driver: Driver }>(kind, `the watched payment addresses on ${kind}`);
  test.before(async (context) => {
    context.driver = await openTestDriver(kind);
  });
  test.after(async ({ driver }) => {
    await driver.close();
  });

  test('deposit addresses of requested payments, and payee addresses only where the payer has a payout address, paged and distinct', async ({
    driver,
  }) => {
    // A chain of this test's own, so that other payments in the database do not count.
    const chainId = randomInt(1_000_000, 2_000_000_000);
    const withPayout = await dealOfTwo(driver, true);
    const without = await dealOfTwo(driver, false);
    const sharedPayee = freshAddress();
    const expected = new Set<string>();

    // Payer with a payout address: both its payee address (once, though owed twice) and deposits.
    for (let i = 0; i < 2; i += 1) {
      const deposit = freshAddress();
      await pay(driver, withPayout, chainId, { payee: sharedPayee, deposit });
      expected.add(deposit.toLowerCase());
    }
    expected.add(sharedPayee.toLowerCase());
    // No deposit address: the payee address alone.
    const lonePayee = freshAddress();
    await pay(driver, withPayout, chainId, { payee: lonePayee, deposit: null });
    expected.add(lonePayee.toLowerCase());
    // Payer without a payout address: its deposit address only, never the payee's.
    const unwatchedPayee = freshAddress();
    const deposit = freshAddress();
    await pay(driver, without, chainId, { payee: unwatchedPayee, deposit });
    expected.add(deposit.toLowerCase());
    // No longer requested: nothing of it.
    const seenDeposit = freshAddress();
    const seen = await pay(driver, withPayout, chainId, {
      payee: freshAddress(),
      deposit: seenDeposit,
    });
    await driver.transaction(async (tx) => {
      const version = await lockPayment(tx, seen.paymentId);
      assert.ok(version !== null);
      await updatePayment(tx, seen.paymentId, version, {
        status: 'seen',
        machine: { value: 'seen' },
        at: T0,
      });
    });
    // Another chain: nothing of it.
    const otherChain = freshAddress();
    await pay(driver, withPayout, chainId + 1, { payee: freshAddress(), deposit: otherChain });

    const sorted = [...expected].sort();
    for (const limit of [1, 2, 3, 100]) {
      const all = await allPages(driver, chainId, limit);
      assert.equal(all, sorted, `pages of ${limit}`);
    }
    const all = await allPages(driver, chainId, 100);
    assert.not.ok(all.includes(unwatchedPayee.toLowerCase()));
    assert.not.ok(all.includes(seenDeposit.toLowerCase()));
    assert.not.ok(all.includes(otherChain.toLowerCase()));
    assert.equal(await openPaymentAddresses(driver, chainId, sorted[sorted.length - 1]!, 10), []);
  });

  test.run();
}

for (const kind of driverKinds()) addressesSuite(kind);
