-- Invites can be taken back: by the workspace's owner (revoke_invite), and at once for every
-- pending invite a member made when that member leaves or is removed. `revoked` is final, like
-- `joined` and `expired`.
alter table invites drop constraint invites_status_check;
alter table invites add constraint invites_status_check
  check (status in ('pending', 'joined', 'expired', 'revoked'));
create index invites_pending_by_maker on invites (workspace_id, created_by) where status = 'pending';
