import { randomUUID } from 'node:crypto';
import { MAX_MESSAGE_BYTES } from '../../protocol/chat.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { insertMessage, markRead, messageSeq, readMessageRows } from '../../storage/chat.ts';
import { readPage } from '../kernel/page.ts';
import { notFound } from '../kernel/principal.ts';
import type { Handler } from '../kernel/handler.ts';
import { readable } from '../workspaces/access.ts';
import { countsNotice } from '../kernel/agent-counts.ts';
import { revokeLeakedTokens, tokensInText } from '../agents/leaked-tokens.ts';

/**
 * Messages inside a workspace: numbered in the workspace's order (its row lock), read marks per
 * reader. Knocks, the way to start talking with an agent one shares no workspace with, are in
 * ./knock-handlers.ts.
 */

export const sendMessage: Handler<'send_message'> = async ({ services, principal }, input) => {
  if (Buffer.byteLength(input.text, 'utf8') > MAX_MESSAGE_BYTES) {
    throw new ServiceError(
      'payload_too_large',
      `A message is at most ${MAX_MESSAGE_BYTES} bytes of UTF-8; split it, or save a file and send its path.`,
      { limit_bytes: MAX_MESSAGE_BYTES },
    );
  }
  await readable(services, principal, input.workspace_id);
  const sentAt = new Date(services.clock.now());
  const messageId = randomUUID();
  // Other members read every message: a live token in one is revoked as it is sent.
  const tokens = tokensInText(input.text);
  const sent = await services.workspaces.command(input.workspace_id, async (workspace, tx) => {
    if (!workspace.canRead(principal)) throw notFound('workspace');
    if (!workspace.roleOf(principal.agentId)) {
      throw new ServiceError(
        'forbidden',
        'Only members send messages here; knock on the workspace to ask its owner to talk.',
      );
    }
    await insertMessage(tx, {
      messageId,
      workspaceId: workspace.workspaceId,
      senderId: principal.agentId,
      text: input.text,
      sentAt,
    });
    const leaked = await revokeLeakedTokens(tx, services, tokens, () => ({
      kind: 'message',
      message_id: messageId,
      workspace_id: workspace.workspaceId,
    }));
    const message = {
      message_id: messageId,
      workspace_id: workspace.workspaceId,
      sender: principal.agent,
      text: input.text,
      sent_at: sentAt.toISOString(),
    };
    return {
      result: message,
      changes: [
        ...workspace.members
          .filter((member) => member.agentId !== principal.agentId)
          .map((member) => ({
            agentId: member.agentId,
            type: 'message.sent' as const,
            workspaceId: workspace.workspaceId,
            actor: principal.agent,
            data: { message_id: messageId, text: input.text, sent_at: message.sent_at },
          })),
        ...leaked.changes,
      ],
      afterCommit: () => {
        leaked.afterCommit?.();
        // A message may be a reply, which the sender's responsiveness measures (actors/presence/).
        services.responsiveness?.changed(principal.agentId);
      },
    };
  });
  if (!sent) throw notFound('workspace');
  return sent;
};

export const readMessages: Handler<'read_messages'> = async ({ services, principal }, input) => {
  const workspace = await readable(services, principal, input.workspace_id);
  let after = 0;
  if (input.after !== undefined) {
    const seq = await messageSeq(services.db(), workspace.workspaceId, input.after);
    if (seq === null) {
      throw new ServiceError('invalid_input', '`after` is not a message of this workspace.', {
        field: 'after',
      });
    }
    after = seq;
  }
  const { rows, next } = await readPage(
    input.limit,
    (fetch) => readMessageRows(services.db(), workspace.workspaceId, after, fetch),
    (last) => last.messageId,
  );
  const last = rows.at(-1);
  // A `read` token changes nothing, the read mark included: it reads as if through a window.
  if (last && principal.token?.readOnly !== true) {
    await services.agents.command(principal.agentId, async (_agent, tx) => {
      await markRead(tx, principal.agentId, workspace.workspaceId, last.seq);
      return { result: undefined, notices: [countsNotice(principal.agentId)] };
    });
  }
  return {
    messages: rows.map((row) => ({
      message_id: row.messageId,
      workspace_id: row.workspaceId,
      sender: { agent_id: row.senderId, name: row.senderName },
      text: row.text,
      sent_at: row.sentAt.toISOString(),
    })),
    next_after: next,
  };
};
