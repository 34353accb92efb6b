-- Each member's unread messages in a workspace (messages from others after its read mark),
-- kept in the transaction that changes them: a message sent adds one for every other member,
-- reading sets it from the new mark, joining counts what the workspace already holds. `whoami`
-- sums them instead of scanning messages on every call.
alter table workspace_members add column unread_messages integer not null default 0
  check (unread_messages >= 0);

-- What was recorded before this column: counted once here, as the old query counted.
update workspace_members wm set unread_messages = (
  select count(*)::int from messages m
  left join message_reads r on r.agent_id = wm.agent_id and r.workspace_id = m.workspace_id
  where m.workspace_id = wm.workspace_id and m.seq > coalesce(r.read_seq, 0)
    and m.sender_id <> wm.agent_id
);


-- The pending knocks an agent has to answer, counted for `whoami` without its whole history.
create index knocks_pending_to on knocks (to_agent, expires_at) where status = 'pending';
