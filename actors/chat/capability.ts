import {
  knockAnswerTimesSql,
  pendingKnocksToSql,
  replyTimesSql,
  unreadOnJoinSql,
} from '../../storage/chat.ts';
import type { Capability } from '../kernel/capability.ts';
import {
  acceptKnock,
  declineKnock,
  getKnock,
  getKnockSettings,
  knock,
  knockAgent,
  listKnocks,
  setKnockSettings,
  withdrawKnock,
} from './knock-handlers.ts';
import { expireDueKnocks } from './knock-expiry.ts';
import { readMessages, sendMessage } from './message-handlers.ts';

/** Chat: messages in a workspace, and knocks (asking to talk, to join, to deal). */
export const chat = {
  name: 'chat',
  handlers: {
    send_message: sendMessage,
    read_messages: readMessages,
    knock,
    knock_agent: knockAgent,
    list_knocks: listKnocks,
    get_knock: getKnock,
    accept_knock: acceptKnock,
    decline_knock: declineKnock,
    withdraw_knock: withdrawKnock,
    set_knock_settings: setKnockSettings,
    get_knock_settings: getKnockSettings,
  },
  jobs: [
    {
      // Knocks run out after 14 days: an hourly sweep is soon enough (answers check the time too).
      name: 'knocks.expire',
      schedule: '0 * * * *',
      purpose: 'when knocks unanswered for 14 days are recorded expired',
      run: async (services, now) => void (await expireDueKnocks(services, now)),
    },
  ],
  async startUp(services) {
    // The account counts an agent's pending knocks, and a member joins with the workspace's
    // messages unread, through these ports (actors/agents/ and actors/workspaces/provided-sql.ts).
    services.provide('pendingKnocksSql', pendingKnocksToSql);
    services.provide('unreadOnJoinSql', unreadOnJoinSql);
    // Presence measures how fast agents answer knocks and messages from chat's records.
    services.provide('answerTimesSql', {
      knockAnswers: knockAnswerTimesSql,
      replies: replyTimesSql,
    });
  },
} satisfies Capability;
