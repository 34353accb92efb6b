import { randomUUID } from 'node:crypto';
import { ServiceError } from '../../protocol/errors.ts';
import type { ModerationAction } from '../../protocol/moderation.ts';
import type { ChangeDraft } from '../../storage/kernel/changes.ts';
import { lockAgentForModeration } from '../../storage/agents/agent-suspensions.ts';
import {
  insertOperatorLog,
  readOperatorLog as readLogRows,
  setAgentSuspended,
  setListingHidden,
} from '../../storage/moderation.ts';
import { lockListingForModeration } from '../../storage/store/moderated-listings.ts';
import type { Handler } from '../kernel/handler.ts';
import { readCursorPage } from '../kernel/page.ts';
import { notFound, type Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';

/**
 * The operator's acts. Each runs in one transaction: the act, its operator log entry and the
 * `operator.notice` change to the agent concerned, so none is ever recorded without the others.
 * To anyone but the operator these operations do not exist (the doors answer the 404 of an
 * unknown route; the handlers say the same should one be reached another way).
 */

function notice(
  principal: Principal,
  agentId: string,
  action: ModerationAction,
  reason: string,
  listingId?: string,
): ChangeDraft {
  return {
    agentId,
    type: 'operator.notice',
    actor: principal.agent,
    data: {
      action,
      reason,
      ...(listingId !== undefined ? { listing_id: listingId } : {}),
      from_operator: true,
    },
  };
}

/** hide_listing and show_listing: one act on the listing's `hidden_at`. */
async function moderateListing(
  services: Services,
  principal: Principal,
  input: { listing_id: string; reason: string },
  hide: boolean,
) {
  if (!principal.isOperator) throw notFound('listing');
  const action: ModerationAction = hide ? 'hide_listing' : 'show_listing';
  return services.commit(async (tx) => {
    const listing = await lockListingForModeration(tx, input.listing_id);
    if (!listing) throw notFound('listing');
    if (listing.hidden === hide) {
      throw hide
        ? new ServiceError(
            'already_hidden',
            'That listing is hidden already: show_listing shows it.',
          )
        : new ServiceError('not_hidden', 'That listing is not hidden: nothing to show again.');
    }
    const at = new Date(services.clock.now());
    const entryId = randomUUID();
    await setListingHidden(tx, listing.listingId, hide ? at : null, hide ? input.reason : null);
    await insertOperatorLog(tx, {
      entryId,
      at,
      action,
      target: { agent_id: listing.authorId, listing_id: listing.listingId },
      reason: input.reason,
    });
    return {
      result: { listing_id: listing.listingId, hidden: hide, entry_id: entryId },
      changes: [notice(principal, listing.authorId, action, input.reason, listing.listingId)],
    };
  });
}

/**
 * suspend_agent and restore_agent: one act on the agent's `suspended_at`. Its tokens are the
 * resolver's to refuse (it reads the suspension with each token): told here, in the transaction
 * (other processes) and after the commit (this one), which also closes the agent's sockets.
 */
async function moderateAgent(
  services: Services,
  principal: Principal,
  input: { agent_id: string; reason: string },
  suspend: boolean,
) {
  if (!principal.isOperator) throw notFound('agent');
  const action: ModerationAction = suspend ? 'suspend_agent' : 'restore_agent';
  const result = await services.commit(async (tx) => {
    const agent = await lockAgentForModeration(tx, input.agent_id);
    if (!agent) throw notFound('agent');
    if (suspend && agent.isOperator) {
      throw new ServiceError(
        'operator_not_suspendable',
        'The operator cannot suspend itself: it would lock itself out of restore_agent.',
      );
    }
    if (agent.suspended === suspend) {
      throw suspend
        ? new ServiceError(
            'already_suspended',
            'That agent is suspended already: restore_agent lifts it.',
          )
        : new ServiceError('not_suspended', 'That agent is not suspended: nothing to restore.');
    }
    const at = new Date(services.clock.now());
    const entryId = randomUUID();
    await setAgentSuspended(tx, agent.agentId, suspend ? at : null, suspend ? input.reason : null);
    await insertOperatorLog(tx, {
      entryId,
      at,
      action,
      target: { agent_id: agent.agentId },
      reason: input.reason,
    });
    await services.noticeTokenChange(tx, agent.agentId);
    return {
      result: { agent_id: agent.agentId, suspended: suspend, entry_id: entryId },
      changes: [notice(principal, agent.agentId, action, input.reason)],
      // Before the notice is pushed: a parked long-poll it wakes finds the tokens forgotten.
      afterCommit: () => services.forgetCredentials(input.agent_id),
    };
  });
  return result;
}

export const hideListing: Handler<'hide_listing'> = ({ services, principal }, input) =>
  moderateListing(services, principal, input, true);

export const showListing: Handler<'show_listing'> = ({ services, principal }, input) =>
  moderateListing(services, principal, input, false);

export const suspendAgent: Handler<'suspend_agent'> = ({ services, principal }, input) =>
  moderateAgent(services, principal, input, true);

export const restoreAgent: Handler<'restore_agent'> = ({ services, principal }, input) =>
  moderateAgent(services, principal, input, false);

export const readOperatorLog: Handler<'read_operator_log'> = async (
  { services, principal },
  input,
) => {
  if (!principal.isOperator) throw notFound('operator log');
  const { rows, nextCursor } = await readCursorPage(
    input,
    { kind: 'o', shape: ['time', 'uuid'], after: ([at, entryId]) => ({ at, entryId }) },
    (after, fetch) => readLogRows(services.db(), after, fetch),
    (last) => [last.at.toISOString(), last.entryId],
  );
  return {
    entries: rows.map((row) => ({
      entry_id: row.entryId,
      at: row.at.toISOString(),
      action: row.action as ModerationAction,
      agent_id: row.target.agent_id,
      ...(row.target.listing_id !== undefined ? { listing_id: row.target.listing_id } : {}),
      reason: row.reason,
    })),
    next_cursor: nextCursor,
  };
};
