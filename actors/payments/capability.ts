import { PAYMENT_RECEIPTS_SQL } from '../../storage/payments/payment-receipts.ts';
import { lockPayment } from '../../storage/payments/payments.ts';
import type { Capability } from '../kernel/capability.ts';
import type { ActorRegistry } from '../kernel/registry.ts';
import { loadPaymentActor, type PaymentActor } from './actor.ts';
import type { ChainAccess, ChainSettings } from './chain/clients.ts';
import type { PaymentWatcher } from './chain/watcher.ts';
import { paymentsOfDeals } from './deal-payments.ts';
import { expireDuePayments } from './expiry.ts';
import { readLog } from './log.ts';
import { confirmOffchainPayment, recordOffchainPayment } from './offchain.ts';
import { paymentsSettings } from './settings.ts';

declare module '../kernel/services.ts' {
  interface ServiceConfig {
    /** The chain settings, from the environment (./settings.ts, paymentsSettings). */
    chain?: ChainSettings;
  }
  interface Services {
    /** Every payment, live while in use: its machine. Moved only by ./moves.ts. */
    readonly payments: ActorRegistry<PaymentActor>;
    /**
     * The chain payments are checked on, with one viem client per RPC; null when no RPC is
     * configured (on-chain verification is off: request_payment answers 503).
     */
    readonly chain: ChainAccess | null;
    /** This process's poll loop over the chain; null when there is none (CHAIN_POLL_MS=0). */
    readonly paymentWatcher: PaymentWatcher | null;
  }
}

/*
 * The modules that import viem (addresses and signatures, deposit addresses, the chain's
 * clients and checks) load on first use rather than at start: viem is ~29 MB of RSS that a
 * service whose agents never pay never needs. The chain's modules load at start-up when
 * CHAIN_RPC_URL is set, the handlers' modules by their first call (which waits for the load).
 */
const requestHandlers = () => import('./handlers.ts');
const payHandler = () => import('./pay-handler.ts');
const payoutHandlers = () => import('./payout-address.ts');
const reportHandlers = () => import('./report-handlers.ts');

/**
 * Payments: USDC paid payer to payee, checked on-chain (requested, seen, confirmed, final,
 * expired), and payments made any other way, recorded and confirmed by both parties. The
 * service holds no money and no key that can move any.
 */
export const payments = {
  name: 'payments',
  settings: paymentsSettings,
  handlers: {
    set_payout_address: async (call, input) =>
      (await payoutHandlers()).setPayoutAddress(call, input),
    get_payout_address: async (call, input) =>
      (await payoutHandlers()).getPayoutAddress(call, input),
    request_payment: async (call, input) => (await requestHandlers()).requestPayment(call, input),
    get_payment: async (call, input) => (await requestHandlers()).getPayment(call, input),
    report_payment_tx: async (call, input) => (await reportHandlers()).reportPaymentTx(call, input),
    report_pay_tx: async (call, input) => (await reportHandlers()).reportPayTx(call, input),
    pay: async (call, input) => (await payHandler()).pay(call, input),
    pay_x402: async (call, input) => (await payHandler()).payX402(call, input),
    record_offchain_payment: recordOffchainPayment,
    confirm_offchain_payment: confirmOffchainPayment,
    read_log: readLog,
  },
  actors: [
    {
      kind: 'payment',
      registry: 'payments',
      load: (paymentId, db) => loadPaymentActor(db, paymentId),
      lock: (paymentId, tx) => lockPayment(tx, paymentId),
      // The watcher, reports and the expiry may move one payment at once from two processes:
      // every move decides on the locked, current row.
      lockFirst: true,
    },
  ],
  jobs: [
    {
      // Payments wait days; a sweep every five minutes is soon enough (JOB_SCHEDULE_PAYMENTS_EXPIRE).
      name: 'payments.expire',
      schedule: '*/5 * * * *',
      purpose: 'when requested payments past their time are recorded expired',
      run: async (services, now) => void (await expireDuePayments(services, now)),
    },
  ],
  async startUp(services, log) {
    services.receiptSources.add('payments', PAYMENT_RECEIPTS_SQL);
    // Deals show their payments through the port they declare (a payment is of a deal).
    services.provide('dealPayments', paymentsOfDeals);
    const settings = services.config.chain;
    const access = settings?.rpcUrls.length
      ? (await import('./chain/clients.ts')).chainAccess(settings)
      : null;
    const checked = access
      ? await (await import('./chain/config-check.ts')).checkForwarderFactory(access)
      : null;
    const chain = checked?.chain ?? null;
    services.provide('chain', chain);
    log(
      chain && checked
        ? `payments: checked on chain ${chain.chainId} (${chain.clients.length} RPC), USDC ${chain.usdc}, ${checked.said}`
        : 'payments: on-chain verification is off (no CHAIN_RPC_URL)',
    );
    // One poll loop per process (CHAIN_POLL_MS=0: none); a lease keeps one process at it.
    services.provide(
      'paymentWatcher',
      chain && settings && settings.pollMs > 0
        ? (await import('./chain/watcher.ts')).startPaymentWatcher(services, log)
        : null,
    );
  },
  async shutDown(services) {
    await services.paymentWatcher?.stop();
  },
} satisfies Capability;
