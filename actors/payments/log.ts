import type { Handler } from '../kernel/handler.ts';
import { readCursorPage } from '../kernel/page.ts';
import { notFound } from '../kernel/principal.ts';
import { readable, WORKSPACE } from '../workspaces/access.ts';
import { readWorkspaceLog } from '../../storage/workspaces/workspace-log.ts';

/**
 * read_log: the workspace's log of payments (on-chain moves and off-chain records), newest
 * first. Members only, also in a public workspace: who paid whom is the parties' business and
 * that of the people they work with, not of every reader of the files.
 */
export const readLog: Handler<'read_log'> = async ({ services, principal }, input) => {
  const workspace = await readable(services, principal, input.workspace_id);
  if (workspace.roleOf(principal.agentId) === undefined) throw notFound(WORKSPACE);
  const { rows, nextCursor } = await readCursorPage(
    input,
    { kind: 'l', shape: ['int'] as const, after: ([seq]) => Number(seq) },
    (before, fetch) =>
      readWorkspaceLog(services.db(), workspace.workspaceId, before ?? null, fetch),
    (last) => [String(last.seq)],
  );
  return {
    lines: rows.map((line) => ({
      seq: Number(line.seq),
      at: line.at.toISOString(),
      kind: line.kind,
      payment_id: line.paymentId,
      data: line.data as Record<string, unknown>,
    })),
    next_cursor: nextCursor,
  };
};
