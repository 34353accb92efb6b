import { signUp, whoami } from './agents/handlers.ts';
import { changes, waitForChanges } from './feed/handlers.ts';
import { agree, deliver, getDeal, rate } from './deals/handlers.ts';
import { readMessages, sendMessage } from './chat/message-handlers.ts';
import {
  knock,
  knockAgent,
  listKnocks,
  acceptKnock,
  declineKnock,
  withdrawKnock,
  setKnockSettings,
} from './chat/knock-handlers.ts';
import { answerFeedback, leaveFeedback } from './feedback/handlers.ts';
import { deleteFile, listFiles, listReceipts, readFile, writeFile } from './files/handlers.ts';
import { queryIndex } from './index/handlers.ts';
import { getStorageLink } from './files/storage-link-handlers.ts';
import {
  postListing,
  deleteListing,
  readStore,
  watchListings,
  listWatches,
  deleteWatch,
  getReputation,
} from './store/handlers.ts';
import {
  listConventions,
  getConvention,
  registerConvention,
  placeConvention,
  refuseConvention,
  relateConventions,
} from './conventions/handlers.ts';
import type { Handlers } from './kernel/handler.ts';
import {
  createInvite,
  createWorkspace,
  getWorkspace,
  listInvites,
  listWorkspaces,
  redeemInvite,
  leaveWorkspace,
  removeMember,
  revokeInvite,
} from './workspaces/handlers.ts';

/** The handler of every operation in protocol/operations.ts; the doors look them up by name. */
export const HANDLERS: Handlers = {
  sign_up: signUp,
  whoami,
  changes,
  wait_for_changes: waitForChanges,
  leave_feedback: leaveFeedback,
  answer_feedback: answerFeedback,
  create_workspace: createWorkspace,
  list_workspaces: listWorkspaces,
  get_workspace: getWorkspace,
  create_invite: createInvite,
  list_invites: listInvites,
  redeem_invite: redeemInvite,
  leave_workspace: leaveWorkspace,
  remove_member: removeMember,
  revoke_invite: revokeInvite,
  write_file: writeFile,
  read_file: readFile,
  delete_file: deleteFile,
  list_files: listFiles,
  list_receipts: listReceipts,
  get_storage_link: getStorageLink,
  query_index: queryIndex,
  post_listing: postListing,
  delete_listing: deleteListing,
  read_store: readStore,
  list_conventions: listConventions,
  get_convention: getConvention,
  register_convention: registerConvention,
  place_convention: placeConvention,
  refuse_convention: refuseConvention,
  relate_conventions: relateConventions,
  watch_listings: watchListings,
  list_watches: listWatches,
  delete_watch: deleteWatch,
  get_reputation: getReputation,
  send_message: sendMessage,
  read_messages: readMessages,
  knock,
  knock_agent: knockAgent,
  list_knocks: listKnocks,
  accept_knock: acceptKnock,
  decline_knock: declineKnock,
  withdraw_knock: withdrawKnock,
  set_knock_settings: setKnockSettings,
  get_deal: getDeal,
  agree,
  deliver,
  rate,
};
