import { DIGEST_INTERVAL_MS } from '../../../protocol/email/email.ts';
import { readChanges, type StoredChangeRow } from '../../../storage/kernel/changes.ts';
import {
  agentsDueForDigest,
  findNotificationEmail,
  markDigested,
} from '../../../storage/email/notification-emails.ts';
import type { CapabilityJob } from '../../kernel/capability.ts';
import type { Services } from '../../kernel/services.ts';
import { enqueueMail } from '../outbox.ts';
import { digestNames } from './digest-names.ts';
import { unsubscribeUrl } from './handlers.ts';
import { digestMail, type DigestItem } from './messages.ts';

/** Addresses one run digests; the rest wait for the next run, five minutes on. */
const AGENTS_PER_RUN = 200;
/** Changes one digest reads; past them it says "and more" and the next digest goes on. */
const CHANGES_PER_DIGEST = 1000;
/** Lines one digest lists at most. */
const ITEMS_PER_DIGEST = 50;

const PAYMENT_TYPES = new Set([
  'payment.requested',
  'payment.seen',
  'payment.confirmed',
  'payment.final',
  'payment.expired',
  'payment.reorged',
]);

/**
 * The digest's lines from the changes, names only: who knocked, which workspace has new
 * messages (counted, never their text), who joined, which payment, which delivery. Knock
 * notes, memos and message texts are never read.
 */
export function digestItems(
  changes: readonly StoredChangeRow[],
  names: Map<string, string>,
): DigestItem[] {
  const items: DigestItem[] = [];
  // One line per workspace with new messages; the line's count grows as more are read.
  const messages = new Map<string, Extract<DigestItem, { kind: 'messages' }>>();
  const nameOf = (id: string | undefined, fallback: string) =>
    (id === undefined ? undefined : names.get(id)) ?? fallback;
  for (const { event } of changes) {
    const data = event.data as Record<string, unknown>;
    const workspaceId = event.workspace_id;
    if (event.type === 'knock.received') {
      const from = data.from as { agent_id: string; name: string };
      const knockedOn = data.workspace_id as string | null;
      items.push({
        kind: 'knock',
        who: nameOf(from.agent_id, from.name),
        workspace: knockedOn === null ? null : nameOf(knockedOn, knockedOn),
      });
    } else if (event.type === 'knock.accepted') {
      items.push({
        kind: 'knock_accepted',
        who: nameOf(event.actor?.agent_id, event.actor?.name ?? 'an agent'),
      });
    } else if (event.type === 'message.sent' && workspaceId !== undefined) {
      const seen = messages.get(workspaceId);
      if (seen) seen.count += 1;
      else {
        const entry = {
          kind: 'messages' as const,
          workspace: nameOf(workspaceId, workspaceId),
          count: 1,
        };
        messages.set(workspaceId, entry);
        items.push(entry);
      }
    } else if (event.type === 'invite.joined' && workspaceId !== undefined) {
      items.push({
        kind: 'joined',
        who: nameOf(data.agent_id as string, data.name as string),
        workspace: nameOf(workspaceId, workspaceId),
      });
    } else if (PAYMENT_TYPES.has(event.type)) {
      items.push({
        kind: 'payment',
        paymentId: data.payment_id as string,
        amount: `${data.amount_usdc as string} USDC`,
        status: data.status as string,
      });
    } else if (event.type.startsWith('offchain_payment.')) {
      items.push({
        kind: 'payment',
        paymentId: data.offchain_payment_id as string,
        amount: `${data.amount as string} ${data.currency as string}`,
        status: `${data.status as string} (off-chain)`,
      });
    } else if (event.type === 'deal.delivered') {
      const files = data.files as { path: string }[];
      items.push({
        kind: 'delivery',
        dealId: data.deal_id as string,
        paths: files.map((file) => file.path),
      });
    }
  }
  return items;
}

/** The ids whose names a digest shows. */
function idsIn(changes: readonly StoredChangeRow[]) {
  const agents = new Set<string>();
  const workspaces = new Set<string>();
  for (const { agentId, event } of changes) {
    agents.add(agentId);
    if (event.workspace_id !== undefined) workspaces.add(event.workspace_id);
    const data = event.data as Record<string, unknown>;
    if (event.type === 'knock.received') {
      agents.add((data.from as { agent_id: string }).agent_id);
      if (typeof data.workspace_id === 'string') workspaces.add(data.workspace_id);
    }
    if (event.actor) agents.add(event.actor.agent_id);
  }
  return { agents: [...agents], workspaces: [...workspaces] };
}

/**
 * One agent's digest, in one transaction with the row locked: read what came after the last
 * digest, queue one email when there is anything to tell, and move the row on. The hour is
 * checked again under the lock, so two runs (two processes, a late fire) send one.
 */
async function digestOne(services: Services, agentId: string, now: Date): Promise<boolean> {
  return services.commit(async (tx) => {
    const row = await findNotificationEmail(tx, agentId, { lock: true });
    if (!row || row.status !== 'confirmed') return { result: false };
    if (row.lastDigestAt && now.getTime() - row.lastDigestAt.getTime() < DIGEST_INTERVAL_MS) {
      return { result: false };
    }
    const changes = await readChanges(tx, agentId, row.digestedSeq, CHANGES_PER_DIGEST);
    const last = changes.at(-1);
    if (!last) return { result: false };
    const names = await digestNames(tx, services, idsIn(changes));
    const items = digestItems(changes, names);
    if (items.length === 0) {
      await markDigested(tx, agentId, last.seq, null);
      return { result: false };
    }
    const text = digestMail({
      agentName: names.get(agentId) ?? agentId,
      items: items.slice(0, ITEMS_PER_DIGEST),
      more: items.length > ITEMS_PER_DIGEST || changes.length === CHANGES_PER_DIGEST,
      unsubscribeUrl: unsubscribeUrl(services, row.unsubscribeKey),
      serviceUrl: services.config.baseUrl,
    });
    await enqueueMail(tx, services, {
      kind: 'digest',
      agentId,
      to: row.email,
      ...text,
      autoSubmitted: 'auto-generated',
      unsubscribeUrl: unsubscribeUrl(services, row.unsubscribeKey),
    });
    await markDigested(tx, agentId, last.seq, now);
    return { result: true };
  });
}

/** Digests every confirmed address due at `now`; returns how many emails were queued. */
export async function runDigests(services: Services, now: Date): Promise<number> {
  if (!services.config.mail) return 0;
  const due = await agentsDueForDigest(
    services.driver,
    new Date(now.getTime() - DIGEST_INTERVAL_MS),
    AGENTS_PER_RUN,
  );
  let sent = 0;
  for (const agentId of due) if (await digestOne(services, agentId, now)) sent += 1;
  return sent;
}

/** `email.digest`: every five minutes (JOB_SCHEDULE_EMAIL_DIGEST); at most one per hour each. */
export const digestJob: CapabilityJob = {
  name: 'email.digest',
  schedule: '*/5 * * * *',
  purpose:
    "when notification digests fall due are sent (each agent's person gets at most one an hour)",
  run: async (services, now) => void (await runDigests(services, now)),
};
