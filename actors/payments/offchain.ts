import { randomUUID } from 'node:crypto';
import { partyOfDeal } from '../../machines/deal.ts';
import { ServiceError } from '../../protocol/errors.ts';
import type { Queryable } from '../../storage/driver.ts';
import {
  confirmOffchainPayment as confirmRow,
  findOffchainPayment,
  insertOffchainPayment,
  type OffchainPaymentRow,
} from '../../storage/payments/offchain-payments.ts';
import { countConfirmedOffchain } from '../../storage/payments/payment-counts.ts';
import { appendWorkspaceLog } from '../../storage/workspaces/workspace-log.ts';
import { receiptsOfPayment } from '../../storage/payments/payment-receipts.ts';
import type { Handler } from '../kernel/handler.ts';
import { notFound } from '../kernel/principal.ts';
import type { SignedReceipt } from '../receipts/receipts.ts';
import { agreedDealOf } from './deal-parties.ts';
import { offchainPaymentAnswer } from './payment-view.ts';
import { issueOffchainConfirmedReceipt } from './receipts.ts';

/**
 * Payments made any other way (a bank transfer, cash, another chain): one party records it, the
 * other confirms it. The service checks none of it, so a confirmed one counts in reputation
 * apart (`offchain_payments_confirmed`) and never backs a rating. The confirmation issues a
 * signed `offchain_payment_confirmed` receipt (./receipts.ts): both parties' word, on record.
 */

/** The confirmation's receipt of an off-chain payment, or null while it is recorded. */
async function confirmationReceipt(db: Queryable, id: string): Promise<unknown> {
  const [receipt] = await receiptsOfPayment(db, id);
  return receipt ?? null;
}

/** What the events and the log lines say (protocol/events.ts, offchainMove). */
function offchainData(row: OffchainPaymentRow) {
  return {
    offchain_payment_id: row.offchainPaymentId,
    deal_id: row.dealId,
    status: row.status,
    payer_agent_id: row.payerAgentId,
    payee_agent_id: row.payeeAgentId,
    recorded_by: row.recordedBy,
    amount: row.amount,
    currency: row.currency,
  };
}

async function mustFind(db: Queryable, id: string): Promise<OffchainPaymentRow> {
  const row = await findOffchainPayment(db, id);
  if (!row) throw notFound('off-chain payment');
  return row;
}

export const recordOffchainPayment: Handler<'record_offchain_payment'> = async (
  { services, principal },
  input,
) => {
  const { row: deal, context } = await agreedDealOf(services, principal, input.deal_id);
  const { payer_agent_id: payer, payee_agent_id: payee } = input;
  if (payer === payee) {
    throw new ServiceError('invalid_input', 'payee_agent_id: the payer cannot pay itself.', {
      field: 'payee_agent_id',
    });
  }
  for (const [field, agentId] of [
    ['payer_agent_id', payer],
    ['payee_agent_id', payee],
  ] as const) {
    if (!partyOfDeal(context, agentId)) {
      throw new ServiceError('invalid_input', `${field}: not a party of this deal.`, { field });
    }
  }
  if (principal.agentId !== payer && principal.agentId !== payee) {
    throw new ServiceError(
      'forbidden',
      'You record only a payment you made or received: be its payer or its payee.',
    );
  }
  const id = randomUUID();
  const now = new Date(services.clock.now());
  const row = await services.commit(async (tx) => {
    await insertOffchainPayment(tx, {
      offchainPaymentId: id,
      dealId: deal.dealId,
      workspaceId: deal.workspaceId,
      payerAgentId: payer,
      payeeAgentId: payee,
      recordedBy: principal.agentId,
      amount: input.amount,
      currency: input.currency,
      means: input.means,
      note: input.note ?? null,
      recordedAt: now,
    });
    const recorded = await mustFind(tx, id);
    const data = offchainData(recorded);
    await appendWorkspaceLog(tx, {
      workspaceId: deal.workspaceId,
      at: now,
      kind: 'offchain_payment.recorded',
      paymentId: id,
      data: { ...data, means: recorded.means, note: recorded.note },
    });
    return {
      result: recorded,
      changes: [payer, payee].map((agentId) => ({
        agentId,
        type: 'offchain_payment.recorded' as const,
        workspaceId: deal.workspaceId,
        actor: principal.agent,
        data,
      })),
    };
  });
  return offchainPaymentAnswer(row, null);
};

export const confirmOffchainPayment: Handler<'confirm_offchain_payment'> = async (
  { services, principal },
  input,
) => {
  const found = await findOffchainPayment(services.db(), input.offchain_payment_id);
  if (
    !found ||
    (found.payerAgentId !== principal.agentId && found.payeeAgentId !== principal.agentId)
  ) {
    throw notFound('off-chain payment');
  }
  if (found.recordedBy === principal.agentId) {
    throw new ServiceError(
      'forbidden',
      'You recorded this payment: only the other party confirms it.',
    );
  }
  if (found.status === 'confirmed') {
    return offchainPaymentAnswer(
      found,
      await confirmationReceipt(services.db(), found.offchainPaymentId),
    );
  }
  const now = new Date(services.clock.now());
  const { row, receipt } = await services.commit<{ row: OffchainPaymentRow; receipt: unknown }>(
    async (tx) => {
      const confirmed = await confirmRow(tx, found.offchainPaymentId, principal.agentId, now);
      const current = await mustFind(tx, found.offchainPaymentId);
      // Confirmed meanwhile by the same party's other request: the same answer, nothing new.
      if (!confirmed) {
        return {
          result: {
            row: current,
            receipt: await confirmationReceipt(tx, current.offchainPaymentId),
          },
        };
      }
      await countConfirmedOffchain(tx, current.payerAgentId, current.payeeAgentId);
      const signed: SignedReceipt = await issueOffchainConfirmedReceipt(tx, services, current);
      const data = offchainData(current);
      await appendWorkspaceLog(tx, {
        workspaceId: current.workspaceId,
        at: now,
        kind: 'offchain_payment.confirmed',
        paymentId: current.offchainPaymentId,
        data: { ...data, confirmed_by: principal.agentId },
      });
      return {
        result: { row: current, receipt: signed },
        changes: [current.payerAgentId, current.payeeAgentId].map((agentId) => ({
          agentId,
          type: 'offchain_payment.confirmed' as const,
          workspaceId: current.workspaceId,
          actor: principal.agent,
          data,
        })),
      };
    },
  );
  return offchainPaymentAnswer(row, receipt);
};
