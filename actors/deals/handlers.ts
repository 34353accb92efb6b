import { randomUUID } from 'node:crypto';
import {
  dealCodec,
  dealStatus,
  mayAgree,
  newDeal,
  partyOfDeal,
  type DealContext,
} from '../../machines/deal.ts';
import { ServiceError } from '../../protocol/errors.ts';
import type { EventType } from '../../protocol/events.ts';
import { parseFilePath } from '../../protocol/files/path.ts';
import { agentNames } from '../../storage/agents/agent-names.ts';
import { findAgreement, insertAgreement, listAgreements } from '../../storage/deals/agreements.ts';
import { listDealsOf } from '../../storage/deals/deal-lists.ts';
import { addDealParties, ensureDeal, findDeal, findDealAt } from '../../storage/deals/deals.ts';
import { insertDelivery, listDeliveries } from '../../storage/deals/deliveries.ts';
import { insertRating, listRatings } from '../../storage/deals/ratings.ts';
import type { Queryable } from '../../storage/driver.ts';
import { findFile, findKeptVersion } from '../../storage/files/files.ts';
import { countPartiesJoined, countRatingChange } from '../../storage/deals/reputation-counts.ts';
import { lockWorkspace } from '../../storage/workspaces/workspaces.ts';
import type { DealActor } from './actor.ts';
import { dealHeader } from './header.ts';
import { notFound, type Principal } from '../kernel/principal.ts';
import { appendReceipt } from '../receipts/chain.ts';
import type { SignedReceipt } from '../receipts/receipts.ts';
import type { Services } from '../kernel/services.ts';
import type { Handler } from '../kernel/handler.ts';
import { allOrNothing } from '../kernel/commit.ts';
import { readCursorPage } from '../kernel/page.ts';
import { assertFileNotHidden, hiddenFrom } from '../files/hidden-files.ts';
import { readable } from '../workspaces/access.ts';

/**
 * The deal operations ("Routes" in protocol/documents/deals-protocol.md): get_deal, agree,
 * deliver, rate. A deal is a markdown file with a deal header (./header.ts). Every agreement,
 * delivery and rating is a DealActor command whose signed receipt is appended to its
 * workspace's chain (actors/receipts/chain.ts), after the workspace's last receipt whatever
 * that one recorded.
 */

/** Everyone a deal's change concerns: its parties for good, and those `also` names. */
const audience = (context: DealContext, also: readonly string[] = []) => [
  ...new Set([...context.parties, ...also]),
];

const partyChanges = (
  parties: readonly string[],
  type: EventType,
  principal: Principal,
  workspaceId: string,
  data: Record<string, unknown>,
) => parties.map((agentId) => ({ agentId, type, workspaceId, actor: principal.agent, data }));

export const agree: Handler<'agree'> = async ({ services, principal }, input) => {
  const path = parseFilePath(input.path);
  const workspace = await readable(services, principal, input.workspace_id);
  await assertFileNotHidden(services, principal, workspace, path, 'file');
  const db = services.db();
  const kept = await findKeptVersion(db, workspace.workspaceId, path, input.version);
  if (!kept) {
    const current = await findFile(db, workspace.workspaceId, path);
    if (!current) throw notFound('file');
    throw new ServiceError(
      'deal_version_mismatch',
      `There is no version ${input.version} of this file to agree to; its current version is ${current.version} (sha256 ${current.sha256}).`,
      { current_version: current.version, current_sha256: current.sha256 },
    );
  }
  if (kept.sha256 !== input.sha256) {
    throw new ServiceError(
      'deal_version_mismatch',
      `Version ${input.version} of this file has sha256 ${kept.sha256}, not ${input.sha256}: read it again before agreeing.`,
      { version: input.version, sha256: kept.sha256 },
    );
  }
  const header = await dealHeader(db, workspace.workspaceId, path, input.version);
  // Deleted since its version was found: gone, as a deleted file is.
  if (!header) throw notFound('file');
  const parties = header.parties.map((p) => p.agent_id);
  if (!parties.includes(principal.agentId)) {
    // A party of what was agreed is asked even by a version that leaves it out: no round drops
    // a party without its agreement. Without a deal there is none: refused before a row is
    // made. With one, the command decides on the locked, current copy.
    if (!(await findDealAt(db, workspace.workspaceId, path))) throw notAsked();
  }
  const now = new Date(services.clock.now());
  // The deal's row and the agreement commit together: a refused or failed agreement leaves
  // no deal behind.
  return allOrNothing(services.driver, () =>
    agreeOnDeal(services, principal, input, workspace, path, parties, now),
  );
};

/** The agreement itself, once the version and its parties are known: see `agree`. */
async function agreeOnDeal(
  services: Services,
  principal: Principal,
  input: Parameters<Handler<'agree'>>[1],
  workspace: { workspaceId: string },
  path: string,
  parties: string[],
  now: Date,
) {
  const dealId = await services.deals.create(async (tx) => ({
    result: await ensureDeal(tx, {
      dealId: randomUUID(),
      workspaceId: workspace.workspaceId,
      path,
      machine: dealCodec.persist(newDeal(randomUUID())),
      createdAt: now,
    }),
  }));
  const answer = await services.deals.command(dealId, async (deal, tx) => {
    const prior = (await listAgreements(tx, dealId))
      .filter((a) => a.version === input.version && a.sha256 === input.sha256)
      .map((a) => a.agentId);
    const mine = prior.includes(principal.agentId)
      ? await findAgreement(tx, dealId, input.version, principal.agentId)
      : null;
    const context = deal.state.context;
    if (!mayAgree(context, principal.agentId, parties)) throw notAsked();
    const counted =
      context.round?.version === input.version
        ? context.round.agreed.includes(principal.agentId)
        : context.agreed?.version === input.version;
    if (mine && counted) {
      // Agreed already, and it counts: the same answer again, nothing new on record.
      const agreement = mine.receipt as Record<string, unknown>;
      return { result: { deal_id: dealId, status: deal.status, agreement } };
    }
    const next = dealCodec.step(deal.state, {
      type: 'agree',
      agent: principal.agentId,
      version: input.version,
      sha256: input.sha256,
      parties,
      prior,
    });
    // An agreement on record counts again when its version's round is reopened.
    const receipt = mine
      ? (mine.receipt as SignedReceipt)
      : await appendReceipt(tx, services.files.signingKeys, workspace.workspaceId, {
          receipt_id: randomUUID(),
          action: 'agree',
          workspace_id: workspace.workspaceId,
          path,
          deal_id: dealId,
          version: input.version,
          sha256: input.sha256,
          parties,
          agent_id: principal.agentId,
          agent_name: principal.name,
          at: now.toISOString(),
        });
    if (!mine) {
      await insertAgreement(tx, {
        agreementId: receipt.receipt_id as string,
        dealId,
        agentId: principal.agentId,
        version: input.version,
        sha256: input.sha256,
        parties,
        agreedAt: now,
        receipt,
      });
    }
    const agreedNow =
      next.context.agreed?.version === input.version &&
      deal.state.context.agreed?.version !== input.version;
    if (agreedNow) {
      const joined = await addDealParties(tx, dealId, next.context.parties, now);
      // The reputation counts them in this transaction: no read recounts the deals.
      await countPartiesJoined(tx, dealId, joined);
    }
    return {
      result: { deal_id: dealId, status: dealStatus(next), agreement: receipt },
      next,
      // The parties of the deal hear of every round, also one that leaves them out.
      changes: partyChanges(
        audience(next.context, parties),
        'deal.agreed',
        principal,
        workspace.workspaceId,
        {
          deal_id: dealId,
          path,
          version: input.version,
          sha256: input.sha256,
          agent_id: principal.agentId,
          agreed: agreedNow,
          status: dealStatus(next),
        },
      ),
    };
  });
  if (!answer) throw notFound('deal');
  return answer;
}

const notAsked = () =>
  new ServiceError(
    'forbidden',
    'You are not one of the parties this version names, nor a party of what was agreed.',
  );

/** Whether the caller reads the workspace now (a member, or it is public). */
async function reads(services: Services, principal: Principal, workspaceId: string) {
  try {
    await readable(services, principal, workspaceId);
    return true;
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'not_found') return false;
    throw error;
  }
}

/**
 * The deal by id, and whether the caller reads its workspace. A caller that neither reads the
 * workspace nor is a party of the deal gets the deal's 404 (the same bytes as a deal that does
 * not exist: protocol/documents/protocol.md, "Requests and answers"); `deal` checks the party
 * in the command, on the locked row.
 */
async function dealFor(services: Services, principal: Principal, dealId: string) {
  const row = await findDeal(services.db(), dealId);
  if (!row) throw notFound('deal');
  return { row, member: await reads(services, principal, row.workspaceId) };
}

/**
 * The deal's context for a party that delivers or rates: a party of any version that was agreed
 * keeps that right, also after later rounds and after leaving the workspace.
 */
function assertPartyOfDeal(deal: DealActor, agentId: string, member: boolean): DealContext {
  const context = deal.state.context;
  const party = partyOfDeal(context, agentId);
  if (!member && !party) throw notFound('deal');
  if (!context.agreed) {
    throw new ServiceError(
      'deal_not_agreed',
      'Not every party has agreed to one version of this deal yet.',
    );
  }
  if (!party) {
    throw new ServiceError('forbidden', 'You are not a party of any version that was agreed.');
  }
  return context;
}

export const deliver: Handler<'deliver'> = async ({ services, principal }, input) => {
  const { row, member } = await dealFor(services, principal, input.deal_id);
  const paths = input.files.map((p, i) => parseFilePath(p, `files[${i}]`));
  const workspace = await services.workspaces.get(row.workspaceId);
  const now = new Date(services.clock.now());
  const answer = await services.deals.command(row.dealId, async (deal, tx) => {
    const context = assertPartyOfDeal(deal, principal.agentId, member);
    if (!member) {
      // Delivered files are pinned from the workspace: one that no longer reads it cannot
      // name them (nor learn which paths exist there).
      throw new ServiceError(
        'forbidden',
        "You no longer read the deal's workspace: only a member delivers files saved there. You may still rate.",
      );
    }
    // The workspace's row lock before its files are read: no save or delete lands between
    // reading them and this delivery's place in the receipt chain.
    await lockWorkspace(tx, row.workspaceId);
    const files: { path: string; version: number; size: number; sha256: string }[] = [];
    const missing: string[] = [];
    // A file withheld from the caller (a hidden listing's, to a party outside the workspace) is
    // one it cannot read: not saved there, as far as it may know (../files/hidden-files.ts).
    const hidden = workspace
      ? await hiddenFrom(services, principal, workspace, paths, tx)
      : new Set<string>();
    for (const path of [...new Set(paths)]) {
      const file = hidden.has(path) ? null : await findFile(tx, row.workspaceId, path);
      if (file) files.push({ path, version: file.version, size: file.size, sha256: file.sha256 });
      else missing.push(path);
    }
    if (missing.length > 0) {
      throw new ServiceError(
        'delivery_invalid',
        `Not saved in the deal's workspace: ${missing.join(', ')}. Save the files there first.`,
        { paths: missing },
      );
    }
    const next = dealCodec.step(deal.state, { type: 'deliver', agent: principal.agentId });
    const deliveryId = randomUUID();
    const receipt = await appendReceipt(tx, services.files.signingKeys, row.workspaceId, {
      receipt_id: deliveryId,
      action: 'deliver',
      workspace_id: row.workspaceId,
      deal_id: row.dealId,
      files,
      ...(input.note === undefined ? {} : { note: input.note }),
      agent_id: principal.agentId,
      agent_name: principal.name,
      at: now.toISOString(),
    });
    await insertDelivery(tx, {
      deliveryId,
      dealId: row.dealId,
      agentId: principal.agentId,
      note: input.note ?? null,
      files,
      deliveredAt: now,
      receipt,
    });
    return {
      result: { delivery_id: deliveryId, files, receipt },
      next,
      changes: partyChanges(audience(context), 'deal.delivered', principal, row.workspaceId, {
        deal_id: row.dealId,
        delivery_id: deliveryId,
        files,
        note: input.note ?? null,
      }),
    };
  });
  if (!answer) throw notFound('deal');
  return answer;
};

export const rate: Handler<'rate'> = async ({ services, principal }, input) => {
  const { row, member } = await dealFor(services, principal, input.deal_id);
  const now = new Date(services.clock.now());
  const answer = await services.deals.command(row.dealId, async (deal, tx) => {
    const context = assertPartyOfDeal(deal, principal.agentId, member);
    if (input.agent_id === principal.agentId) {
      throw new ServiceError('invalid_input', 'You rate the other parties, not yourself.', {
        field: 'agent_id',
      });
    }
    if (!partyOfDeal(context, input.agent_id)) {
      throw new ServiceError(
        'invalid_input',
        'That agent is not a party of any version of this deal that was agreed.',
        { field: 'agent_id' },
      );
    }
    const next = dealCodec.step(deal.state, {
      type: 'rate',
      rater: principal.agentId,
      ratee: input.agent_id,
    });
    // Backed when a payment of the deal is final on-chain now (a rating made before that is
    // counted as backed once it is: the payment's move counts it, countDealPaymentFinal).
    const backedDeals = await services.dealPayments.withFinalPayment(tx, [row.dealId]);
    const paymentBacked = backedDeals.has(row.dealId);
    const ratingId = randomUUID();
    const receipt = await appendReceipt(tx, services.files.signingKeys, row.workspaceId, {
      receipt_id: ratingId,
      action: 'rate',
      workspace_id: row.workspaceId,
      deal_id: row.dealId,
      rater: principal.agentId,
      ratee: input.agent_id,
      delivered_can: input.delivered_can,
      accepted_on_need: input.accepted_on_need,
      score: input.score ?? null,
      comment: input.comment ?? null,
      payment_backed: paymentBacked,
      agent_name: principal.name,
      at: now.toISOString(),
    });
    const superseded = await insertRating(tx, {
      ratingId,
      dealId: row.dealId,
      raterId: principal.agentId,
      rateeId: input.agent_id,
      deliveredCan: input.delivered_can,
      acceptedOnNeed: input.accepted_on_need,
      score: input.score ?? null,
      comment: input.comment ?? null,
      paymentBacked,
      ratedAt: now,
      supersededBy: null,
      receipt,
    });
    // The ratee's kept record loses the superseded rating and gains this one, in this
    // transaction (storage/deals/reputation-counts.ts).
    await countRatingChange(tx, row.dealId, input.agent_id, superseded, {
      score: input.score ?? null,
    });
    const supersedes = superseded?.ratingId ?? null;
    return {
      result: { rating_id: ratingId, payment_backed: paymentBacked, supersedes, receipt },
      next,
      changes: partyChanges(audience(context), 'deal.rated', principal, row.workspaceId, {
        deal_id: row.dealId,
        rating_id: ratingId,
        rater: principal.agentId,
        ratee: input.agent_id,
        supersedes,
      }),
    };
  });
  if (!answer) throw notFound('deal');
  return answer;
};

/**
 * The deal at `path`, for one who reads the workspace, or for a party of the deal that no longer
 * does (it left, or was removed): it keeps reading the deal's own record (the header of what was
 * agreed, agreements, deliveries, ratings, receipts), never the workspace's files. Anyone else
 * gets the workspace's 404, whether or not there is a deal.
 */
async function visibleDeal(
  services: Services,
  principal: Principal,
  workspaceId: string,
  path: string,
) {
  const db = services.db();
  try {
    await readable(services, principal, workspaceId);
  } catch (error) {
    const row = await findDealAt(db, workspaceId, path);
    const deal = row ? await services.deals.get(row.dealId) : null;
    if (row && deal && partyOfDeal(deal.state.context, principal.agentId)) return { row, deal };
    throw error;
  }
  const row = await findDealAt(db, workspaceId, path);
  return { row, deal: row ? await services.deals.get(row.dealId) : null };
}

export const listDeals: Handler<'list_deals'> = async ({ services, principal }, input) => {
  const { rows, nextCursor } = await readCursorPage(
    input,
    { kind: 'd', shape: ['time', 'uuid'], after: ([at, dealId]) => ({ at: new Date(at), dealId }) },
    (after, fetch) =>
      listDealsOf(services.db(), principal.agentId, input.status ?? null, after ?? null, fetch),
    (last) => [last.createdAt.toISOString(), last.dealId],
  );
  return {
    deals: rows.map((row) => ({
      deal_id: row.dealId,
      workspace_id: row.workspaceId,
      path: row.path,
      title: row.title,
      status: row.status,
      agreed_version: row.agreedVersion,
    })),
    next_cursor: nextCursor,
  };
};

/**
 * Where get_deal's deal is, from its one form: `deal_id`, or `workspace_id` with `path`. A
 * `deal_id` the caller may not see is answered as one that does not exist (the deal's 404, not
 * its workspace's, which would tell that it exists).
 */
async function dealAddress(
  services: Services,
  principal: Principal,
  input: {
    deal_id?: string | undefined;
    workspace_id?: string | undefined;
    path?: string | undefined;
  },
): Promise<{ workspaceId: string; path: string }> {
  const byFile = input.workspace_id !== undefined || input.path !== undefined;
  if (input.deal_id !== undefined && byFile) {
    throw new ServiceError(
      'invalid_input',
      'Name the deal one way: deal_id alone, or workspace_id with path; not both.',
      { field: 'deal_id' },
    );
  }
  if (input.deal_id !== undefined) {
    const row = await findDeal(services.db(), input.deal_id);
    if (!row) throw notFound('deal');
    try {
      await visibleDeal(services, principal, row.workspaceId, row.path);
    } catch (error) {
      if (error instanceof ServiceError && error.code === 'not_found') throw notFound('deal');
      throw error;
    }
    return { workspaceId: row.workspaceId, path: row.path };
  }
  if (input.workspace_id === undefined || input.path === undefined) {
    throw new ServiceError(
      'invalid_input',
      'Name the deal: deal_id (as list_deals shows it), or workspace_id with path (its file).',
      { field: input.workspace_id === undefined ? 'workspace_id' : 'path' },
    );
  }
  return { workspaceId: input.workspace_id, path: parseFilePath(input.path) };
}

export const getDeal: Handler<'get_deal'> = async ({ services, principal }, input) => {
  const { workspaceId, path } = await dealAddress(services, principal, input);
  const { row, deal } = await visibleDeal(services, principal, workspaceId, path);
  // A deal on a file withheld from the caller is not there for it, nor a delivery pinning one,
  // unless it is a party (what it agreed to and was delivered stays its record).
  const workspace = await services.workspaces.get(workspaceId);
  const party = deal !== null && partyOfDeal(deal.state.context, principal.agentId);
  if (workspace && !party) {
    const resource = input.deal_id === undefined ? 'file' : 'deal';
    await assertFileNotHidden(services, principal, workspace, path, resource);
  }
  const delivered = row ? await listDeliveries(services.db(), row.dealId) : [];
  const withheld =
    workspace && !party
      ? await hiddenFrom(
          services,
          principal,
          workspace,
          delivered.flatMap((d) => d.files.map((f) => f.path)),
        )
      : new Set<string>();
  const db = services.db();
  const context = deal?.state.context;
  const shownVersion = context?.agreed?.version ?? (await findFile(db, workspaceId, path))?.version;
  if (shownVersion === undefined) throw notFound('file');
  // A deleted deal file keeps no header (dealHeader): the record stays readable, untitled.
  const header = await dealHeader(db, workspaceId, path, shownVersion);
  const iso = (d: Date) => d.toISOString();
  const named = new Set(context?.agreed?.parties ?? []);
  const former = (context?.parties ?? []).filter((agentId) => !named.has(agentId));
  return {
    deal_id: row?.dealId ?? null,
    workspace_id: workspaceId,
    path,
    title: header?.title ?? null,
    status: deal?.status ?? 'draft',
    parties: header?.parties ?? [],
    former_parties: await agentRefs(db, former),
    agreed: context?.agreed ?? null,
    round: context?.round ?? null,
    agreements: row
      ? (await listAgreements(db, row.dealId)).map((a) => ({
          agreement_id: a.agreementId,
          agent_id: a.agentId,
          version: a.version,
          sha256: a.sha256,
          at: iso(a.agreedAt),
          receipt: a.receipt as Record<string, unknown>,
        }))
      : [],
    deliveries: delivered
      .filter((d) => !d.files.some((f) => withheld.has(f.path)))
      .map((d) => ({
        delivery_id: d.deliveryId,
        agent_id: d.agentId,
        note: d.note,
        files: d.files,
        at: iso(d.deliveredAt),
        receipt: d.receipt as Record<string, unknown>,
      })),
    ratings: row
      ? (await ratingsWithBacking(services, db, row.dealId)).map((r) => ({
          rating_id: r.ratingId,
          rater: r.raterId,
          ratee: r.rateeId,
          delivered_can: r.deliveredCan,
          accepted_on_need: r.acceptedOnNeed,
          score: r.score,
          comment: r.comment,
          payment_backed: r.paymentBacked,
          at: iso(r.ratedAt),
          superseded_by: r.supersededBy,
          receipt: r.receipt as Record<string, unknown>,
        }))
      : [],
    payments: row ? await services.dealPayments.ofDeal(db, row.dealId) : [],
  };
};

/** The deal's ratings, payment-backed when the deal has a final on-chain payment now. */
async function ratingsWithBacking(services: Services, db: Queryable, dealId: string) {
  const backed = (await services.dealPayments.withFinalPayment(db, [dealId])).has(dealId);
  return (await listRatings(db, dealId)).map((r) => ({ ...r, paymentBacked: backed }));
}

/** `{agent_id, name}` of each agent, in the order given. */
async function agentRefs(db: Queryable, agentIds: readonly string[]) {
  if (agentIds.length === 0) return [];
  const names = await agentNames(db, agentIds);
  return agentIds.map((agentId) => ({ agent_id: agentId, name: names.get(agentId) ?? '' }));
}
