import { randomUUID } from 'node:crypto';
import * as assert from 'uvu/assert';
import { insertAgent } from '../../storage/agents/agents.ts';
import { DatabaseError } from '../../storage/database-error.ts';
import { ensureDeal } from '../../storage/deals/deals.ts';
import type { Driver } from '../../storage/driver.ts';
import {
  bindScope,
  lockIndexSetup,
  READER_ROLE_SETUP,
  READER_ROLE_USABLE,
} from '../../storage/index/index-scope.ts';
import {
  findPayment,
  insertPayment,
  lockPayment,
  openPaymentsByAddress,
  paymentsDueToExpire,
  paymentsInFlight,
  paymentsOfDeal,
  updatePayment,
  type NewPayment,
  type PaymentStatus,
} from '../../storage/payments/payments.ts';
import { findPayoutAddress, upsertPayoutAddress } from '../../storage/payments/payout-addresses.ts';
import {
  creditOfPayment,
  creditTransfer,
  findCredit,
  releaseCredit,
} from '../../storage/payments/transfer-credits.ts';
import { readChainCursor, writeChainCursor } from '../../storage/payments/chain-cursor.ts';
import {
  confirmOffchainPayment,
  findOffchainPayment,
  insertOffchainPayment,
} from '../../storage/payments/offchain-payments.ts';
import {
  countConfirmedOffchain,
  countFinalPayment,
  paymentCounts,
  paymentCountsOf,
} from '../../storage/payments/payment-counts.ts';
import { dealsWithFinalPayment, paymentsOfAgent } from '../../storage/payments/final-payments.ts';
import { appendWorkspaceLog, readWorkspaceLog } from '../../storage/workspaces/workspace-log.ts';
import { unreadOnJoinSql } from '../../storage/chat.ts';
import { insertMember, insertWorkspace } from '../../storage/workspaces/workspaces.ts';
import { driverKinds, openTestDriver, type DriverKind } from '../helpers/storage.ts';
import { driverSuite } from './contract.ts';

/**
 * storage/payments/ and the workspace log on each driver: every read and write, the constraints
 * that keep the money path honest (one payment per memo in a deal, one credit per transfer and
 * per payment, only final payments counted), and that agents' own SQL cannot read any of it.
 */

const CHAIN = 8453;
const USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
const T0 = new Date(Date.UTC(2030, 0, 1));
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);
let addressCount = 1;
/** An EIP-55-looking address (mixed case) no other test uses. */
const freshAddress = () => `0xAbC${(addressCount++).toString(16).padStart(37, '0')}`;
let hashCount = 1;
/** A transaction hash (with hex letters, so that its case can vary) no other test uses. */
const freshHash = () => `0x${'abcdef'.repeat(9)}${(hashCount++).toString(16).padStart(10, '0')}`;

/** Two agents, the payee's workspace (the payer a member) and an agreed deal in it. */
async function dealOfTwo(driver: Driver) {
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
  });
  return { payer, payee, workspaceId, dealId };
}

type Deal = Awaited<ReturnType<typeof dealOfTwo>>;

function newPayment(deal: Deal, overrides: Partial<NewPayment> = {}): NewPayment {
  return {
    paymentId: randomUUID(),
    dealId: deal.dealId,
    workspaceId: deal.workspaceId,
    payerAgentId: deal.payer,
    payeeAgentId: deal.payee,
    memo: `memo ${randomUUID()}`,
    amountUnits: 12_500_000n,
    payeeAddress: freshAddress(),
    depositAddress: freshAddress(),
    depositSalt: `0x${'ab'.repeat(32)}`,
    chainId: CHAIN,
    tokenAddress: USDC,
    machine: { value: 'requested' },
    createdAt: at(0),
    expiresAt: at(7 * 24 * 60),
    ...overrides,
  };
}

async function pay(driver: Driver, row: NewPayment): Promise<NewPayment> {
  assert.ok(await driver.transaction((tx) => insertPayment(tx, row)), 'the payment is recorded');
  return row;
}

/** Moves the payment to `status` from the version it is at. */
async function move(driver: Driver, paymentId: string, status: PaymentStatus, minute = 1) {
  return driver.transaction(async (tx) => {
    const version = await lockPayment(tx, paymentId);
    assert.ok(version !== null);
    return updatePayment(tx, paymentId, version, {
      status,
      machine: { value: status },
      at: at(minute),
    });
  });
}

/** A final payment: credited by a transfer of its own, then moved to final. */
async function finalPayment(driver: Driver, row: NewPayment, minute = 10) {
  await pay(driver, row);
  const hash = freshHash();
  await driver.transaction((tx) =>
    creditTransfer(tx, { chainId: CHAIN, txHash: hash, logIndex: 0, paymentId: row.paymentId }),
  );
  await move(driver, row.paymentId, 'final', minute);
  // The move to final counts it, as actors/payments/moves.ts does in the same transaction.
  await driver.transaction((tx) => countFinalPayment(tx, row.payerAgentId, row.payeeAgentId));
  return hash;
}

async function sqlStateOf(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (error) {
    if (error instanceof DatabaseError) return error.sqlState ?? 'none';
    throw error;
  }
  return 'ran';
}

function paymentsSuite(kind: DriverKind): void {
  const test = driverSuite<{ driver: Driver }>(kind, `payments storage on ${kind}`);

  test.before(async (context) => {
    context.driver = await openTestDriver(kind);
  });
  test.after(async ({ driver }) => {
    await driver.close();
  });

  test('a payout address is kept per agent and replaced by a new proof', async ({ driver }) => {
    const { payee } = await dealOfTwo(driver);
    assert.is(await findPayoutAddress(driver, payee), null);
    const first = { agentId: payee, address: freshAddress(), signature: '0x01', verifiedAt: at(1) };
    await driver.transaction((tx) => upsertPayoutAddress(tx, first));
    assert.equal(await findPayoutAddress(driver, payee), first);
    const second = {
      agentId: payee,
      address: freshAddress(),
      signature: '0x02',
      verifiedAt: at(2),
    };
    await driver.transaction((tx) => upsertPayoutAddress(tx, second));
    assert.equal(await findPayoutAddress(driver, payee), second);
    const notAnAddress = { ...second, address: 'bob' };
    assert.is(
      await sqlStateOf(driver.transaction((tx) => upsertPayoutAddress(tx, notAnAddress))),
      '23514',
    );
  });

  test('a payment reads back as written, its amount exact up to the largest allowed', async ({
    driver,
  }) => {
    const deal = await dealOfTwo(driver);
    const row = await pay(driver, newPayment(deal, { amountUnits: 999_999_999_999_999_999n }));
    const found = await findPayment(driver, row.paymentId);
    assert.equal(found, {
      ...row,
      status: 'requested',
      version: 1,
      reportedTxHash: null,
      finalAt: null,
      requestedAtBlock: null,
    });
    assert.is(found?.amountUnits, 999_999_999_999_999_999n);
    const noDeposit = await pay(
      driver,
      newPayment(deal, { depositAddress: null, depositSalt: null }),
    );
    assert.is((await findPayment(driver, noDeposit.paymentId))?.depositAddress, null);
    assert.equal(
      (await paymentsOfDeal(driver, deal.dealId)).map((p) => p.paymentId).sort(),
      [row.paymentId, noDeposit.paymentId].sort(),
    );
    assert.is(await findPayment(driver, randomUUID()), null);
  });

  test('a memo is unique within its deal: the second is refused and nothing is written', async ({
    driver,
  }) => {
    const deal = await dealOfTwo(driver);
    const first = await pay(driver, newPayment(deal, { memo: 'invoice 7' }));
    const again = newPayment(deal, { memo: 'invoice 7' });
    assert.is(await driver.transaction((tx) => insertPayment(tx, again)), false);
    assert.is(await findPayment(driver, again.paymentId), null);
    assert.is((await findPayment(driver, first.paymentId))?.memo, 'invoice 7');
    // Both at once: exactly one is kept.
    const racers = [newPayment(deal, { memo: 'race' }), newPayment(deal, { memo: 'race' })];
    const outcomes = await Promise.all(
      racers.map((row) => driver.transaction((tx) => insertPayment(tx, row))),
    );
    assert.equal(outcomes.filter(Boolean).length, 1);
    // The same memo in another deal is another payment.
    const other = await dealOfTwo(driver);
    assert.ok(
      await driver.transaction((tx) => insertPayment(tx, newPayment(other, { memo: 'invoice 7' }))),
    );
  });

  test('an amount of zero or less, a payer paying itself or a status not the machine’s is refused', async ({
    driver,
  }) => {
    const deal = await dealOfTwo(driver);
    for (const amountUnits of [0n, -1n]) {
      assert.is(
        await sqlStateOf(
          driver.transaction((tx) => insertPayment(tx, newPayment(deal, { amountUnits }))),
        ),
        '23514',
        String(amountUnits),
      );
    }
    assert.is(
      await sqlStateOf(
        driver.transaction((tx) =>
          insertPayment(tx, newPayment(deal, { payeeAgentId: deal.payer })),
        ),
      ),
      '23514',
    );
    const row = await pay(driver, newPayment(deal));
    const failed = 'failed' as PaymentStatus;
    assert.is(
      await sqlStateOf(
        driver.transaction((tx) =>
          updatePayment(tx, row.paymentId, 1, { status: failed, machine: {}, at: at(1) }),
        ),
      ),
      '23514',
    );
    assert.is((await findPayment(driver, row.paymentId))?.status, 'requested');
  });

  test('a move written from a stale version is refused and changes nothing', async ({ driver }) => {
    const deal = await dealOfTwo(driver);
    const row = await pay(driver, newPayment(deal));
    const hash = freshHash();
    const seen = await driver.transaction((tx) =>
      updatePayment(tx, row.paymentId, 1, {
        status: 'seen',
        machine: { value: 'seen' },
        at: at(1),
        reportedTxHash: hash,
      }),
    );
    assert.is(seen, 2);
    const stale = await driver.transaction((tx) =>
      updatePayment(tx, row.paymentId, 1, { status: 'expired', machine: {}, at: at(2) }),
    );
    assert.is(stale, null);
    let found = await findPayment(driver, row.paymentId);
    assert.is(found?.status, 'seen');
    assert.is(found?.version, 2);
    assert.equal(found?.machine, { value: 'seen' });
    assert.is(found?.reportedTxHash, hash, 'the reported hash is kept');
    assert.is(found?.finalAt, null);
    // A move that says nothing of the reported hash keeps it; final keeps when.
    assert.is(
      await driver.transaction((tx) =>
        updatePayment(tx, row.paymentId, 2, { status: 'final', machine: {}, at: at(9) }),
      ),
      3,
    );
    found = await findPayment(driver, row.paymentId);
    assert.is(found?.reportedTxHash, hash);
    assert.equal(found?.finalAt, at(9));
    assert.is(
      await driver.transaction((tx) =>
        updatePayment(tx, randomUUID(), 1, { status: 'seen', machine: {}, at: at(1) }),
      ),
      null,
    );
  });

  test('the watcher finds open payments by deposit or payee address, in any case, page by page', async ({
    driver,
  }) => {
    const deal = await dealOfTwo(driver);
    const payeeAddress = freshAddress();
    const byPayee = await Promise.all(
      [0, 1, 2].map(async () => pay(driver, newPayment(deal, { payeeAddress }))),
    );
    const byDeposit = await pay(driver, newPayment(deal));
    const finished = await pay(driver, newPayment(deal, { payeeAddress }));
    await move(driver, finished.paymentId, 'expired');
    const seen = byPayee[0] as NewPayment;
    await move(driver, seen.paymentId, 'seen');

    const wanted = [...byPayee.map((p) => p.paymentId), byDeposit.paymentId].sort();
    const addresses = [
      payeeAddress.toLowerCase(),
      (byDeposit.depositAddress as string).toUpperCase(),
    ];
    const all = await openPaymentsByAddress(driver, addresses, null, 100);
    assert.equal(
      all.map((p) => p.paymentId),
      wanted,
    );
    const pages: string[][] = [];
    let after: string | null = null;
    for (;;) {
      const page = await openPaymentsByAddress(driver, addresses, after, 3);
      if (page.length === 0) break;
      pages.push(page.map((p) => p.paymentId));
      after = page.at(-1)?.paymentId ?? null;
    }
    assert.equal(
      pages.map((page) => page.length),
      [3, 1],
    );
    assert.equal(pages.flat(), wanted);
    assert.equal(await openPaymentsByAddress(driver, [], null, 10), []);
    assert.equal(await openPaymentsByAddress(driver, [freshAddress()], null, 10), []);
  });

  test('payments in flight are the seen and confirmed ones, page by page', async ({ driver }) => {
    const deal = await dealOfTwo(driver);
    const before = new Set((await paymentsInFlight(driver, null, 1000)).map((p) => p.paymentId));
    const rows = await Promise.all([0, 1, 2, 3].map(() => pay(driver, newPayment(deal))));
    await move(driver, (rows[0] as NewPayment).paymentId, 'seen');
    await move(driver, (rows[1] as NewPayment).paymentId, 'confirmed');
    await move(driver, (rows[2] as NewPayment).paymentId, 'final');
    const found: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await paymentsInFlight(driver, after, 1);
      if (page.length === 0) break;
      found.push(...page.map((p) => p.paymentId));
      after = page.at(-1)?.paymentId ?? null;
    }
    assert.equal(
      found.filter((id) => !before.has(id)).sort(),
      [(rows[0] as NewPayment).paymentId, (rows[1] as NewPayment).paymentId].sort(),
    );
  });

  test('payments due to expire are the requested ones past their time, oldest first', async ({
    driver,
  }) => {
    const deal = await dealOfTwo(driver);
    // Far in the future, so payments of other tests are not due.
    const far = (days: number) => new Date(Date.UTC(2100, 0, 1) + days * 86_400_000);
    const late = await pay(driver, newPayment(deal, { expiresAt: far(2) }));
    const later = await pay(driver, newPayment(deal, { expiresAt: far(1) }));
    const notYet = await pay(driver, newPayment(deal, { expiresAt: far(30) }));
    const seen = await pay(driver, newPayment(deal, { expiresAt: far(1) }));
    await move(driver, seen.paymentId, 'seen');
    const mine = (rows: { paymentId: string }[]) =>
      rows
        .map((r) => r.paymentId)
        .filter((id) => [late, later, notYet, seen].some((p) => p.paymentId === id));
    assert.equal(mine(await paymentsDueToExpire(driver, far(10), 1000)), [
      later.paymentId,
      late.paymentId,
    ]);
    assert.equal(mine(await paymentsDueToExpire(driver, far(1), 1000)), [later.paymentId]);
    assert.is((await paymentsDueToExpire(driver, far(10), 1)).length, 1);
  });

  test('a transfer credits one payment, ever, and a payment takes one transfer', async ({
    driver,
  }) => {
    const deal = await dealOfTwo(driver);
    const [a, b] = await Promise.all([
      pay(driver, newPayment(deal)),
      pay(driver, newPayment(deal)),
    ]);
    const transfer = { chainId: CHAIN, txHash: freshHash(), logIndex: 3 };
    const credit = (paymentId: string, key = transfer) =>
      driver.transaction((tx) => creditTransfer(tx, { ...key, paymentId }));
    assert.is(await credit(a!.paymentId), 'credited');
    assert.is(await credit(a!.paymentId), 'already_credited', 'the same credit again');
    assert.is(await credit(b!.paymentId), 'already_credited', 'the transfer for another payment');
    const shouting = { ...transfer, txHash: `0x${transfer.txHash.slice(2).toUpperCase()}` };
    assert.is(await credit(b!.paymentId, shouting), 'already_credited', 'another spelling');
    assert.is(
      await credit(a!.paymentId, { ...transfer, logIndex: 4 }),
      'already_credited',
      'a second transfer for a credited payment',
    );
    assert.is(await credit(b!.paymentId, { ...transfer, logIndex: 4 }), 'credited');
    assert.is(
      await credit(b!.paymentId, { ...transfer, chainId: 1 }),
      'already_credited',
      'the payment has its credit',
    );
    assert.is(await findCredit(driver, shouting), a!.paymentId);
    assert.equal(await creditOfPayment(driver, a!.paymentId), transfer);
    assert.is(await findCredit(driver, { ...transfer, logIndex: 9 }), null);
    assert.is(
      await sqlStateOf(credit(randomUUID(), { ...transfer, txHash: 'not a hash' })),
      '23514',
    );
  });

  test('a released credit (a reorg) lets the transfer credit again if it reappears', async ({
    driver,
  }) => {
    const deal = await dealOfTwo(driver);
    const row = await pay(driver, newPayment(deal));
    const transfer = { chainId: CHAIN, txHash: freshHash(), logIndex: 0 };
    await driver.transaction((tx) => creditTransfer(tx, { ...transfer, paymentId: row.paymentId }));
    assert.is(await driver.transaction((tx) => releaseCredit(tx, row.paymentId)), true);
    assert.is(await driver.transaction((tx) => releaseCredit(tx, row.paymentId)), false);
    assert.is(await findCredit(driver, transfer), null);
    assert.is(await creditOfPayment(driver, row.paymentId), null);
    assert.is(
      await driver.transaction((tx) =>
        creditTransfer(tx, { ...transfer, paymentId: row.paymentId }),
      ),
      'credited',
    );
  });

  test('two transactions crediting one transfer at once: exactly one is credited', async ({
    driver,
  }) => {
    const deal = await dealOfTwo(driver);
    const rows = await Promise.all([pay(driver, newPayment(deal)), pay(driver, newPayment(deal))]);
    const transfer = { chainId: CHAIN, txHash: freshHash(), logIndex: 0 };
    const outcomes = await Promise.all(
      rows.map((row) =>
        driver.transaction((tx) => creditTransfer(tx, { ...transfer, paymentId: row.paymentId })),
      ),
    );
    assert.equal(outcomes.sort(), ['already_credited', 'credited']);
    const winner = await findCredit(driver, transfer);
    assert.ok(rows.some((row) => row.paymentId === winner));
  });

  if (kind === 'postgres') {
    test('a credit waiting on another’s uncommitted one is refused once that one commits', async ({
      driver,
    }) => {
      const deal = await dealOfTwo(driver);
      const [a, b] = await Promise.all([
        pay(driver, newPayment(deal)),
        pay(driver, newPayment(deal)),
      ]);
      const transfer = { chainId: CHAIN, txHash: freshHash(), logIndex: 0 };
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      let inserted: () => void = () => undefined;
      const firstInserted = new Promise<void>((resolve) => (inserted = resolve));
      const first = driver.transaction(async (tx) => {
        const outcome = await creditTransfer(tx, { ...transfer, paymentId: a!.paymentId });
        inserted();
        await held;
        return outcome;
      });
      await firstInserted;
      const second = driver.transaction((tx) =>
        creditTransfer(tx, { ...transfer, paymentId: b!.paymentId }),
      );
      // The second insert is seen waiting on the first's row lock before the first commits.
      try {
        for (let tries = 0; ; tries++) {
          const [row] = await driver.query<{ waiting: number }>(
            `select count(*)::int as waiting from pg_stat_activity
             where datname = current_database() and wait_event_type = 'Lock'
               and query like 'insert into payment_credits%'`,
          );
          if (row?.waiting === 1) break;
          assert.ok(tries < 10_000, 'the second credit waits on the first');
          await new Promise((resolve) => setImmediate(resolve));
        }
      } finally {
        release();
      }
      assert.is(await first, 'credited');
      assert.is(await second, 'already_credited');
      assert.is(await findCredit(driver, transfer), a!.paymentId);
    });
  }

  test('the chain cursor is kept per chain, and may go back', async ({ driver }) => {
    const chain = 900_000 + Math.floor(Math.random() * 1000);
    assert.is(await readChainCursor(driver, chain), null);
    await driver.transaction((tx) => writeChainCursor(tx, chain, 120));
    await driver.transaction((tx) => writeChainCursor(tx, chain + 1, 7));
    assert.is(await readChainCursor(driver, chain), 120);
    await driver.transaction((tx) => writeChainCursor(tx, chain, 118));
    assert.is(await readChainCursor(driver, chain), 118);
    assert.is(await readChainCursor(driver, chain + 1), 7);
  });

  test('the workspace log reads newest first, page by page, and only its own workspace', async ({
    driver,
  }) => {
    const deal = await dealOfTwo(driver);
    const other = await dealOfTwo(driver);
    const row = await pay(driver, newPayment(deal));
    const kinds = ['payment.requested', 'payment.seen', 'payment.confirmed', 'payment.final'];
    const seqs: number[] = [];
    for (const [i, kind] of kinds.entries()) {
      seqs.push(
        await driver.transaction(async (tx) => {
          await appendWorkspaceLog(tx, {
            workspaceId: other.workspaceId,
            at: at(i),
            kind: 'offchain_payment.recorded',
            paymentId: null,
            data: {},
          });
          return appendWorkspaceLog(tx, {
            workspaceId: deal.workspaceId,
            at: at(i),
            kind,
            paymentId: row.paymentId,
            data: { n: i, memo: row.memo },
          });
        }),
      );
    }
    assert.ok(seqs.every((seq, i) => i === 0 || seq > (seqs[i - 1] as number)));
    const pages: string[][] = [];
    let before: number | null = null;
    for (;;) {
      const page = await readWorkspaceLog(driver, deal.workspaceId, before, 3);
      if (page.length === 0) break;
      pages.push(page.map((line) => line.kind));
      before = page.at(-1)?.seq ?? null;
    }
    assert.equal(pages, [
      ['payment.final', 'payment.confirmed', 'payment.seen'],
      ['payment.requested'],
    ]);
    const [newest] = await readWorkspaceLog(driver, deal.workspaceId, null, 1);
    assert.equal(newest, {
      seq: seqs[3],
      workspaceId: deal.workspaceId,
      at: at(3),
      kind: 'payment.final',
      paymentId: row.paymentId,
      data: { n: 3, memo: row.memo },
    });
    assert.is(
      await sqlStateOf(
        driver.transaction((tx) =>
          appendWorkspaceLog(tx, {
            workspaceId: deal.workspaceId,
            at: at(0),
            kind: 'not a kind',
            paymentId: null,
            data: {},
          }),
        ),
      ),
      '23514',
    );
  });

  test('an off-chain payment is confirmed once, and only by the party that did not record it', async ({
    driver,
  }) => {
    const deal = await dealOfTwo(driver);
    const stranger = (await dealOfTwo(driver)).payer;
    const record = {
      offchainPaymentId: randomUUID(),
      dealId: deal.dealId,
      workspaceId: deal.workspaceId,
      payerAgentId: deal.payer,
      payeeAgentId: deal.payee,
      recordedBy: deal.payer,
      amount: '40.00',
      currency: 'EUR',
      means: 'bank transfer',
      note: 'March',
      recordedAt: at(1),
    };
    await driver.transaction((tx) => insertOffchainPayment(tx, record));
    assert.equal(await findOffchainPayment(driver, record.offchainPaymentId), {
      ...record,
      status: 'recorded',
      confirmedAt: null,
      confirmedBy: null,
    });
    const confirm = (by: string) =>
      driver.transaction((tx) => confirmOffchainPayment(tx, record.offchainPaymentId, by, at(2)));
    assert.is(await confirm(deal.payer), false, 'the recorder');
    assert.is(await confirm(stranger), false, 'a stranger');
    assert.is((await findOffchainPayment(driver, record.offchainPaymentId))?.status, 'recorded');
    assert.is(await confirm(deal.payee), true, 'the other party');
    assert.is(await confirm(deal.payee), false, 'once');
    assert.equal(await findOffchainPayment(driver, record.offchainPaymentId), {
      ...record,
      status: 'confirmed',
      confirmedAt: at(2),
      confirmedBy: deal.payee,
    });
    assert.is(await findOffchainPayment(driver, randomUUID()), null);
    assert.is(
      await sqlStateOf(
        driver.transaction((tx) =>
          insertOffchainPayment(tx, {
            ...record,
            offchainPaymentId: randomUUID(),
            recordedBy: stranger,
          }),
        ),
      ),
      '23514',
      'recorded by a stranger',
    );
  });

  test('reputation counts and lists only final on-chain payments, off-chain ones apart', async ({
    driver,
  }) => {
    const deal = await dealOfTwo(driver);
    const unpaid = await dealOfTwo(driver);
    const { payer, payee } = deal;
    const zero = { payments_made: 0, payments_received: 0, offchain_payments_confirmed: 0 };
    assert.equal(await paymentCounts(driver, payer), zero);

    const paid = newPayment(deal, { amountUnits: 5_000_000n });
    const hash = await finalPayment(driver, paid, 10);
    const back = newPayment(deal, { payerAgentId: payee, payeeAgentId: payer, amountUnits: 1n });
    const backHash = await finalPayment(driver, back, 20);
    for (const status of ['seen', 'confirmed', 'expired'] as const) {
      const row = await pay(driver, newPayment(deal));
      await move(driver, row.paymentId, status);
    }
    await pay(driver, newPayment(deal));
    const offchain = (recordedBy: string, confirmedBy: string | null) => {
      const id = randomUUID();
      return driver.transaction(async (tx) => {
        await insertOffchainPayment(tx, {
          offchainPaymentId: id,
          dealId: deal.dealId,
          workspaceId: deal.workspaceId,
          payerAgentId: payer,
          payeeAgentId: payee,
          recordedBy,
          amount: '3',
          currency: 'EUR',
          means: 'cash',
          note: null,
          recordedAt: at(1),
        });
        if (confirmedBy && (await confirmOffchainPayment(tx, id, confirmedBy, at(2)))) {
          await countConfirmedOffchain(tx, payer, payee);
        }
      });
    };
    await offchain(payer, payee);
    await offchain(payee, null);

    assert.equal(await paymentCounts(driver, payer), {
      payments_made: 1,
      payments_received: 1,
      offchain_payments_confirmed: 1,
    });
    assert.equal(await paymentCounts(driver, payee), {
      payments_made: 1,
      payments_received: 1,
      offchain_payments_confirmed: 1,
    });
    const many = await paymentCountsOf(driver, [payer, unpaid.payer, payer]);
    assert.is(many.size, 2);
    assert.equal(many.get(unpaid.payer), zero);

    assert.equal(await paymentsOfAgent(driver, payer, 10), [
      {
        payment_id: back.paymentId,
        deal_id: deal.dealId,
        direction: 'received',
        counterparty_agent_id: payee,
        amount_units: 1n,
        chain_id: CHAIN,
        tx_hash: backHash,
        log_index: 0,
        status: 'final',
        at: at(20),
      },
      {
        payment_id: paid.paymentId,
        deal_id: deal.dealId,
        direction: 'made',
        counterparty_agent_id: payee,
        amount_units: 5_000_000n,
        chain_id: CHAIN,
        tx_hash: hash,
        log_index: 0,
        status: 'final',
        at: at(10),
      },
    ]);
    assert.equal(
      (await paymentsOfAgent(driver, payer, 1)).map((p) => p.payment_id),
      [back.paymentId],
    );
    assert.equal(await paymentsOfAgent(driver, unpaid.payer, 10), []);

    const onlyRequested = await dealOfTwo(driver);
    await pay(driver, newPayment(onlyRequested));
    assert.equal(
      [
        ...(await dealsWithFinalPayment(driver, [
          deal.dealId,
          unpaid.dealId,
          onlyRequested.dealId,
          deal.dealId,
        ])),
      ],
      [deal.dealId],
    );
    assert.equal([...(await dealsWithFinalPayment(driver, []))], []);
  });

  test('agents’ SQL cannot read payments, credits, addresses, the log or off-chain records', async ({
    driver,
  }) => {
    const [usable] = await driver.transaction(async (tx) => {
      await lockIndexSetup(tx);
      await tx.script(READER_ROLE_SETUP);
      return tx.query<{ usable: boolean }>(READER_ROLE_USABLE);
    });
    assert.ok(usable?.usable, 'the reader role is set up');
    const { payer } = await dealOfTwo(driver);
    for (const table of [
      'payments',
      'payment_credits',
      'payout_addresses',
      'chain_cursor',
      'workspace_log',
      'offchain_payments',
    ]) {
      const read = driver.transaction(
        async (tx) => {
          await tx.query(bindScope(true), [payer]);
          return tx.query(`select 1 from public.${table}`);
        },
        { readOnly: true, pool: 'agents' },
      );
      assert.is(await sqlStateOf(read), '42501', table);
    }
  });

  test.run();
}

for (const kind of driverKinds()) paymentsSuite(kind);
