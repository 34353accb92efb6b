import { signUp, whoami } from './account.ts';
import { changes, waitForChanges } from './changes.ts';
import { agree, deliver, getDeal, rate } from './deals.ts';
import {
  sendMessage,
  readMessages,
  knock,
  knockAgent,
  listKnocks,
  acceptKnock,
  declineKnock,
  withdrawKnock,
  setKnockSettings,
} from './chat.ts';
import { answerFeedback, leaveFeedback } from './feedback.ts';
import { deleteFile, listFiles, listReceipts, readFile, writeFile } from './files.ts';
import { queryIndex } from './index.ts';
import type { Operation } from './operation.ts';
import { getStorageLink } from './storage-links.ts';
import {
  postListing,
  deleteListing,
  readStore,
  listConventions,
  getConvention,
  registerConvention,
  placeConvention,
  refuseConvention,
  relateConventions,
  watchListings,
  listWatches,
  deleteWatch,
  getReputation,
} from './store.ts';
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
} from './workspaces.ts';

/** Every operation of the service. The doors and /openapi.json are generated from this list. */
export const OPERATIONS = {
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
} as const;

export type Operations = typeof OPERATIONS;
export type OperationName = keyof Operations;

export const OPERATION_LIST: readonly Operation[] = Object.values(OPERATIONS);
