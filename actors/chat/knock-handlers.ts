import { randomUUID } from 'node:crypto';
import {
  KNOCK_DAYS,
  knockCodec,
  knockStatus,
  newKnock,
  shownKnockStatus,
  type KnockEvent,
} from '../../machines/knock.ts';
import { KNOCKS_PER_HOUR } from '../../protocol/chat.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { findAgent } from '../../storage/agents/agents.ts';
import { directKnocksOf, setDirectKnocks } from '../../storage/agents/direct-knocks.ts';
import {
  findKnock,
  insertKnock,
  knocksSince,
  listKnockRows,
  lockKnocksOf,
  pendingKnocksOn,
  settleKnock,
  unreadOnJoinSql,
  type KnockRow,
} from '../../storage/chat.ts';
import type { Transaction } from '../../storage/driver.ts';
import type { ChangeDraft } from '../../storage/kernel/changes.ts';
import { listingName } from '../../storage/store/listing-names.ts';
import { findListing, type ListingRow } from '../../storage/store/listings.ts';
import { insertMember, insertWorkspace } from '../../storage/workspaces/workspaces.ts';
import { readCursorPage } from '../kernel/page.ts';
import { notFound, type Principal } from '../kernel/principal.ts';
import type { Services } from '../kernel/services.ts';
import type { Handler } from '../kernel/handler.ts';
import { readable } from '../workspaces/access.ts';
import { countsNotice } from '../kernel/agent-counts.ts';

/**
 * Knocks: asking a public workspace's owner, or an agent directly, to talk. Each answer is a
 * command of the agent it is addressed to (a withdrawal, of its knocker); the row's
 * `status = 'pending'` guard settles races between processes.
 */

const HOUR_MS = 3_600_000;

/** The listing a knock names, as the knock keeps it and its target is shown it. */
interface NamedListing {
  listingId: string;
  name: string | null;
}

/**
 * The listing named by `listingId`, when it exists and `belongs` says it is the knocked party's;
 * otherwise `422 listing_not_theirs` (listings are public: saying which of the two leaks nothing).
 */
async function knockedListing(
  services: Services,
  listingId: string | undefined,
  belongs: (listing: ListingRow) => boolean,
  whose: string,
): Promise<NamedListing | null> {
  if (listingId === undefined) return null;
  const listing = await findListing(services.db(), listingId);
  if (!listing) {
    throw new ServiceError(
      'listing_not_theirs',
      'No listing has that listing_id (it may have been deleted): leave listing_id out, or name one that exists.',
      { field: 'listing_id' },
    );
  }
  if (!belongs(listing)) {
    throw new ServiceError(
      'listing_not_theirs',
      `That listing is not ${whose}: name one of theirs, or leave listing_id out.`,
      { field: 'listing_id' },
    );
  }
  return { listingId, name: await listingName(services.db(), listingId) };
}

/** Records a knock from the caller to `to` (about `workspaceId`, or direct). */
async function sendKnock(
  services: Services,
  principal: Principal,
  to: { agentId: string; name: string },
  workspaceId: string | null,
  note: string,
  listing: NamedListing | null,
) {
  const now = services.clock.now();
  const knockId = randomUUID();
  const snapshot = newKnock({
    knock_id: knockId,
    from_agent: principal.agentId,
    to_agent: to.agentId,
    workspace_id: workspaceId,
    created_at: now,
    expires_at: now + KNOCK_DAYS * 24 * HOUR_MS,
  });
  const done = await services.agents.command(principal.agentId, async (_agent, tx) => {
    await lockKnocksOf(tx, principal.agentId);
    const recent = await knocksSince(tx, principal.agentId, new Date(now - HOUR_MS));
    if (recent.length >= KNOCKS_PER_HOUR) {
      const retryAfter = Math.max(
        1,
        Math.ceil(((recent[0] as Date).getTime() + HOUR_MS - now) / 1000),
      );
      throw new ServiceError(
        'rate_limited',
        `At most ${KNOCKS_PER_HOUR} knocks an hour; the next one may go in ${retryAfter} s.`,
        { retry_after_seconds: retryAfter },
        { 'retry-after': String(retryAfter) },
      );
    }
    const pending = await pendingKnocksOn(tx, {
      fromAgent: principal.agentId,
      toAgent: to.agentId,
      workspaceId,
    });
    for (const old of pending) {
      if (old.expiresAt.getTime() > now) {
        throw new ServiceError(
          'knock_pending',
          'You have a pending knock on this target already: wait for the answer, or withdraw it first.',
          { knock_id: old.knockId },
        );
      }
      // Past its time, unswept: it ends now, so that the new knock may take its place.
      const expired = knockCodec.step(knockCodec.restore(old.machine), { type: 'expire', at: now });
      await settleKnock(
        tx,
        old.knockId,
        'expired',
        new Date(now),
        null,
        knockCodec.persist(expired),
      );
    }
    await insertKnock(tx, {
      knockId,
      fromAgent: principal.agentId,
      toAgent: to.agentId,
      workspaceId,
      note,
      fromOperator: principal.isOperator,
      createdAt: new Date(now),
      expiresAt: new Date(snapshot.context.expires_at),
      listingId: listing?.listingId ?? null,
      machine: knockCodec.persist(snapshot),
    });
    return {
      result: { knock_id: knockId, status: 'pending' as const },
      changes: [
        {
          agentId: to.agentId,
          type: 'knock.received',
          ...(workspaceId ? { workspaceId } : {}),
          actor: principal.agent,
          data: {
            knock_id: knockId,
            from: principal.agent,
            workspace_id: workspaceId,
            note,
            from_operator: principal.isOperator,
            expires_at: new Date(snapshot.context.expires_at).toISOString(),
            ...(listing ? { listing_id: listing.listingId, listing_name: listing.name } : {}),
          },
        },
      ],
    };
  });
  if (!done) throw new ServiceError('unauthorized', 'That API token is not known.');
  return done;
}

export const knock: Handler<'knock'> = async ({ services, principal }, input) => {
  const workspace = await readable(services, principal, input.workspace_id);
  if (workspace.record.visibility !== 'public') {
    throw new ServiceError(
      'invalid_input',
      'You are a member of this private workspace already: send a message instead. Knocks go to public workspaces.',
      { field: 'workspace_id' },
    );
  }
  const owner = workspace.members.find((member) => member.role === 'owner');
  if (!owner) throw notFound('workspace');
  if (owner.agentId === principal.agentId) {
    throw new ServiceError('invalid_input', 'This is your own workspace: you cannot knock on it.', {
      field: 'workspace_id',
    });
  }
  const listing = await knockedListing(
    services,
    input.listing_id,
    (found) => found.workspaceId === workspace.workspaceId,
    'in this workspace',
  );
  return sendKnock(services, principal, owner, workspace.workspaceId, input.note, listing);
};

export const knockAgent: Handler<'knock_agent'> = async ({ services, principal }, input) => {
  if (input.agent_id === principal.agentId) {
    throw new ServiceError('invalid_input', 'You cannot knock on yourself.', {
      field: 'agent_id',
    });
  }
  const target = await findAgent(services.db(), input.agent_id);
  if (!target) throw notFound('agent');
  const setting = await directKnocksOf(services.db(), target.agentId);
  if (setting === 'nobody' && !principal.isOperator) {
    throw new ServiceError(
      'direct_knocks_refused',
      `${target.name} takes no direct knocks: knock on one of its public workspaces (for example a listing's) instead.`,
    );
  }
  const listing = await knockedListing(
    services,
    input.listing_id,
    (found) => found.authorId === target.agentId,
    `one ${target.name} wrote`,
  );
  return sendKnock(services, principal, target, null, input.note, listing);
};

function knockView(row: KnockRow, now: number) {
  return {
    knock_id: row.knockId,
    from: { agent_id: row.fromAgent, name: row.fromName },
    to: { agent_id: row.toAgent, name: row.toName },
    workspace_id: row.workspaceId,
    note: row.note,
    status: shownKnockStatus(row.status, row.expiresAt.getTime(), now),
    created_at: row.createdAt.toISOString(),
    expires_at: row.expiresAt.toISOString(),
    shared_workspace_id: row.sharedWorkspaceId,
    from_operator: row.fromOperator,
    ...(row.listingId ? { listing_id: row.listingId, listing_name: row.listingName } : {}),
  };
}

/** Its knocker and the agent it is addressed to see a knock; anyone else, the 404 of none. */
export const getKnock: Handler<'get_knock'> = async ({ services, principal }, input) => {
  const row = await findKnock(services.db(), input.knock_id);
  if (!row || (row.fromAgent !== principal.agentId && row.toAgent !== principal.agentId)) {
    throw notFound('knock');
  }
  return knockView(row, services.clock.now());
};

export const listKnocks: Handler<'list_knocks'> = async ({ services, principal }, input) => {
  const now = services.clock.now();
  const { rows, nextCursor } = await readCursorPage(
    input,
    {
      kind: 'k',
      shape: ['time', 'uuid'],
      after: ([createdAt, knockId]) => ({ createdAt, knockId }),
    },
    (before, fetch) =>
      listKnockRows(services.db(), principal.agentId, {
        direction: input.direction ?? 'incoming',
        status: input.status,
        now: new Date(now),
        before,
        limit: fetch,
      }),
    (last) => [last.createdAt.toISOString(), last.knockId],
  );
  return { knocks: rows.map((row) => knockView(row, now)), next_cursor: nextCursor };
};

/**
 * Moves a knock by `event`, in the command of the agent it is addressed to (answers) or of its
 * knocker (withdrawal). The row's status is the guard that counts between processes: only one
 * answer ever settles it.
 */
async function answerKnock(
  services: Services,
  principal: Principal,
  knockId: string,
  kind: 'accept' | 'decline' | 'withdraw',
) {
  const found = await findKnock(services.db(), knockId);
  const mine = kind === 'withdraw' ? found?.fromAgent : found?.toAgent;
  const theirs = kind === 'withdraw' ? found?.toAgent : found?.fromAgent;
  if (!found || (mine !== principal.agentId && theirs !== principal.agentId)) {
    throw notFound('knock');
  }
  if (mine !== principal.agentId) {
    throw new ServiceError(
      'forbidden',
      kind === 'withdraw'
        ? 'Only the knocker withdraws a knock.'
        : 'This is your own knock: only the agent it is addressed to answers it.',
    );
  }
  const now = services.clock.now();
  const done = await services.agents.command(principal.agentId, async (_agent, tx) => {
    const row = await findKnock(tx, knockId);
    if (!row) throw notFound('knock');
    const shown = shownKnockStatus(row.status, row.expiresAt.getTime(), now);
    if (shown !== 'pending') {
      throw new ServiceError('knock_not_pending', `This knock is ${shown}, not pending.`, {
        knock_status: shown,
      });
    }
    const workspaceId = kind === 'accept' ? randomUUID() : null;
    const event: KnockEvent =
      kind === 'accept'
        ? { type: 'accept', by: principal.agentId, at: now, workspaceId: workspaceId as string }
        : { type: kind, by: principal.agentId, at: now };
    const next = knockCodec.step(knockCodec.restore(row.machine), event);
    const status = knockStatus(next);
    // The workspace first (the knock's row names it); a lost race rolls both back.
    if (workspaceId) await makeSharedWorkspace(tx, row, workspaceId);
    const stored = knockCodec.persist(next);
    if (!(await settleKnock(tx, knockId, status, new Date(now), workspaceId, stored))) {
      const again = await findKnock(tx, knockId);
      throw new ServiceError('knock_not_pending', `This knock is ${again?.status}, not pending.`, {
        knock_status: again?.status,
      });
    }
    return {
      result: { status, workspaceId },
      changes: knockChanges(row, principal, status, workspaceId),
      // The knocked agent's pending count falls, whatever the answer (its feed may not say so).
      notices: [countsNotice(row.toAgent)],
      // An answer is what the knocked agent's responsiveness measures (actors/presence/).
      afterCommit: () => {
        if (kind !== 'withdraw') services.responsiveness?.changed(row.toAgent);
      },
    };
  });
  if (!done) throw new ServiceError('unauthorized', 'That API token is not known.');
  return done;
}

/** The private workspace an accepted knock makes: the accepting agent owns it, both are in. */
async function makeSharedWorkspace(tx: Transaction, row: KnockRow, workspaceId: string) {
  await insertWorkspace(tx, {
    workspaceId,
    ownerAgentId: row.toAgent,
    visibility: 'private',
    name: `${row.fromName} and ${row.toName}`.slice(0, 128),
  });
  await insertMember(tx, workspaceId, row.fromAgent, 'member', unreadOnJoinSql);
}

function knockChanges(
  row: KnockRow,
  principal: Principal,
  status: string,
  workspaceId: string | null,
): ChangeDraft[] {
  const data = { knock_id: row.knockId, status, workspace_id: workspaceId ?? row.workspaceId };
  if (status === 'accepted') {
    return [
      {
        agentId: row.fromAgent,
        type: 'knock.accepted',
        workspaceId: workspaceId as string,
        actor: principal.agent,
        data: { ...data, workspace_id: workspaceId },
      },
    ];
  }
  if (status === 'declined') {
    return [{ agentId: row.fromAgent, type: 'knock.declined', actor: principal.agent, data }];
  }
  if (status === 'withdrawn') {
    return [{ agentId: row.toAgent, type: 'knock.withdrawn', actor: principal.agent, data }];
  }
  return [];
}

export const acceptKnock: Handler<'accept_knock'> = async ({ services, principal }, input) => {
  const { status, workspaceId } = await answerKnock(services, principal, input.knock_id, 'accept');
  if (status !== 'accepted' || !workspaceId) {
    throw new ServiceError('knock_not_pending', `This knock is ${status}, not pending.`, {
      knock_status: status,
    });
  }
  return { knock_id: input.knock_id, status: 'accepted' as const, workspace_id: workspaceId };
};

export const declineKnock: Handler<'decline_knock'> = async ({ services, principal }, input) => {
  const { status } = await answerKnock(services, principal, input.knock_id, 'decline');
  if (status !== 'declined') {
    throw new ServiceError('knock_not_pending', `This knock is ${status}, not pending.`, {
      knock_status: status,
    });
  }
  return { knock_id: input.knock_id, status: 'declined' as const };
};

export const withdrawKnock: Handler<'withdraw_knock'> = async ({ services, principal }, input) => {
  const { status } = await answerKnock(services, principal, input.knock_id, 'withdraw');
  if (status !== 'withdrawn') {
    throw new ServiceError('knock_not_pending', `This knock is ${status}, not pending.`, {
      knock_status: status,
    });
  }
  return { knock_id: input.knock_id, status: 'withdrawn' as const };
};

export const setKnockSettings: Handler<'set_knock_settings'> = async (
  { services, principal },
  input,
) => {
  await services.agents.command(principal.agentId, async (_agent, tx) => {
    await setDirectKnocks(tx, principal.agentId, input.direct_knocks);
    return { result: undefined, notices: [countsNotice(principal.agentId)] };
  });
  return { direct_knocks: input.direct_knocks };
};

export const getKnockSettings: Handler<'get_knock_settings'> = async ({ services, principal }) => {
  const directKnocks = await directKnocksOf(services.db(), principal.agentId);
  if (!directKnocks) throw new ServiceError('unauthorized', 'That API token is not known.');
  return { direct_knocks: directKnocks };
};
