-- Reputation's payment counts, kept in the same transaction as the move that earns them (a
-- payment turning final, an off-chain payment confirmed), so no read recounts the payments.
create table agent_payment_counts (
  agent_id uuid primary key references agents (agent_id),
  payments_made integer not null default 0 check (payments_made >= 0),
  payments_received integer not null default 0 check (payments_received >= 0),
  offchain_payments_confirmed integer not null default 0 check (offchain_payments_confirmed >= 0)
);

-- Counts of what was recorded before this table (none outside tests): made true once here.
insert into agent_payment_counts (agent_id, payments_made, payments_received, offchain_payments_confirmed)
select agent_id, sum(made)::int, sum(received)::int, sum(offchain)::int
from (
  select payer_agent_id as agent_id, 1 as made, 0 as received, 0 as offchain
    from payments where status = 'final'
  union all
  select payee_agent_id, 0, 1, 0 from payments where status = 'final'
  union all
  select payer_agent_id, 0, 0, 1 from offchain_payments where status = 'confirmed'
  union all
  select payee_agent_id, 0, 0, 1 from offchain_payments where status = 'confirmed'
) as earned
group by agent_id;
