-- Reputation kept as it changes (storage/reputation-counts.ts): every count `GET
-- /agents/<id>/reputation` and the store's author summaries show is written in the transaction
-- of the move that earns it (a deal agreed, a rating made or corrected, a payment turning
-- final), so no read scans an agent's history. The history stays the source of truth:
-- recountReputation counts it all again, and the test compares the two.

-- A deal with a final on-chain payment: its standing ratings are payment-backed. Set once, by
-- the move of its first payment to final (final is terminal), which also takes the deal's row
-- lock: a rating made meanwhile waits for it and sees it.
alter table deals add column payment_final boolean not null default false;

-- An agent's record: deals agreed, counterparties with a deal agreed, standing ratings
-- received that are payment-backed, and the scores of the standing ratings that have one.
create table agent_reputation (
  agent_id uuid primary key references agents (agent_id),
  deals_agreed integer not null default 0 check (deals_agreed >= 0),
  distinct_counterparties integer not null default 0 check (distinct_counterparties >= 0),
  payment_backed_ratings integer not null default 0 check (payment_backed_ratings >= 0),
  scored_ratings integer not null default 0 check (scored_ratings >= 0),
  score_total integer not null default 0 check (score_total >= 0)
);

-- One row per (agent, counterparty): the deals both agreed to, and the final payments between
-- them either way. The record lists the counterparties with most deals first.
create table agent_counterparties (
  agent_id uuid not null references agents (agent_id),
  counterparty_id uuid not null references agents (agent_id),
  deals_agreed integer not null default 0 check (deals_agreed >= 0),
  payments_final integer not null default 0 check (payments_final >= 0),
  primary key (agent_id, counterparty_id),
  check (agent_id <> counterparty_id)
);
create index agent_counterparties_most_deals
  on agent_counterparties (agent_id, deals_agreed desc, counterparty_id) where deals_agreed > 0;

-- The record lists an agent's newest standing ratings: read in order, never sorted whole.
create index deal_ratings_standing_by_ratee
  on deal_ratings (ratee_id, rated_at desc, rating_id desc) where superseded_by is null;
drop index deal_ratings_by_ratee;

-- What was recorded before this migration, counted once here (the same counting as
-- recountReputation in storage/reputation-counts.ts).
update deals d set payment_final = true
where exists (select 1 from payments p where p.deal_id = d.deal_id and p.status = 'final');

insert into agent_counterparties (agent_id, counterparty_id, deals_agreed, payments_final)
select agent_id, counterparty_id, sum(deals)::int, sum(paid)::int
from (
  select mine.agent_id, other.agent_id as counterparty_id, 1 as deals, 0 as paid
    from deal_parties mine
    join deal_parties other on other.deal_id = mine.deal_id and other.agent_id <> mine.agent_id
  union all
  select payer_agent_id, payee_agent_id, 0, 1 from payments where status = 'final'
  union all
  select payee_agent_id, payer_agent_id, 0, 1 from payments where status = 'final'
) as pairs
group by agent_id, counterparty_id;

insert into agent_reputation (agent_id, deals_agreed, distinct_counterparties,
  payment_backed_ratings, scored_ratings, score_total)
select agent_id, sum(deals)::int, sum(counterparties)::int, sum(backed)::int, sum(scored)::int,
  sum(total)::int
from (
  select agent_id, 1 as deals, 0 as counterparties, 0 as backed, 0 as scored, 0 as total
    from deal_parties
  union all
  select agent_id, 0, 1, 0, 0, 0 from agent_counterparties where deals_agreed > 0
  union all
  select r.ratee_id, 0, 0, case when d.payment_final then 1 else 0 end,
    case when r.score is null then 0 else 1 end, coalesce(r.score, 0)
    from deal_ratings r join deals d on d.deal_id = r.deal_id
    where r.superseded_by is null
) as earned
group by agent_id;
