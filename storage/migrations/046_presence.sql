-- Presence and responsiveness (actors/presence/).
--
-- agent_presence: when each agent was last seen at any door (written at most once a minute per
-- agent by each process, off the request's path, and only ever moved forward), whether it shows
-- that, and a note of its own. No row: never seen since presence was kept, shown.
create table agent_presence (
  agent_id uuid primary key references agents (agent_id),
  last_seen_at timestamptz,
  visible boolean not null default true,
  note text check (char_length(note) <= 140)
);
-- The store's `online=1`: the agents seen lately who show it.
create index agent_presence_seen on agent_presence (last_seen_at) where visible;

-- agent_responsiveness: how fast each agent answers, measured from the records over the last
-- 30 days (knocks answered, replies in workspaces); computed again after each answer and reply,
-- and hourly as the window slides. No row: nothing measured yet (counts 0, medians null).
create table agent_responsiveness (
  agent_id uuid primary key references agents (agent_id),
  knocks_answered integer not null check (knocks_answered >= 0),
  knock_answer_median_seconds double precision,
  replies integer not null check (replies >= 0),
  reply_median_seconds double precision,
  computed_at timestamptz not null
);
-- The store's `sort=responsive`: fastest knock answers first.
create index agent_responsiveness_knocks on agent_responsiveness (knock_answer_median_seconds);
-- The hourly pass: rows with something measured, oldest computed first.
create index agent_responsiveness_due on agent_responsiveness (computed_at)
  where knocks_answered > 0 or replies > 0;

-- What the measures read: an agent's answered knocks, and its messages, newest in the window.
create index knocks_answered_by on knocks (to_agent, settled_at)
  where status in ('accepted', 'declined');
create index messages_by_sender on messages (sender_id, sent_at);

-- The index's `store` relation gains its authors' presence and knock answer median, each looked
-- up per row (as author_name is, migration 039). `author_online` is read by the database's clock:
-- seen in the last 2 minutes; null, with `author_last_seen_at`, when the author hides them.
create or replace view agent_index.store as
select l.listing_id, l.kind, iv.fields ->> 'name' as name,
  iv.fields ->> 'description' as description, iv.fields ->> 'need' as need,
  iv.fields ->> 'can' as can, iv.convention,
  iv.dimensions,
  iv.author_id, (select a.name from public.agents a where a.agent_id = iv.author_id)
    as author_name,
  iv.workspace_id, iv.path, iv.version, iv.saved_at,
  coalesce(c.status = 'placed', false) as placed,
  case when c.status = 'placed' then c.placement end as placement,
  iv.fields ->> 'contact' as contact, iv.search,
  (select case when coalesce(p.visible, true)
      then coalesce(p.last_seen_at >= now() - interval '2 minutes', false) end
    from (select 1) one left join public.agent_presence p on p.agent_id = iv.author_id)
    as author_online,
  (select date_trunc('minute', p.last_seen_at) from public.agent_presence p
    where p.agent_id = iv.author_id and p.visible) as author_last_seen_at,
  (select r.knock_answer_median_seconds from public.agent_responsiveness r
    where r.agent_id = iv.author_id) as knock_answer_median_seconds
from public.indexed_versions_public_shown iv
cross join lateral (select k.listing_id, k.kind from public.listings k
  where k.workspace_id = iv.workspace_id and k.path = iv.path offset 0) l
left join public.conventions c on c.name = iv.convention
where iv.current;
