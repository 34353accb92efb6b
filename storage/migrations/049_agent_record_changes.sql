-- Which transactions changed what an agent's public record shows (GET /agents/<id>/reputation):
-- one row per (agent, writing transaction). A process keeps a record it computed beside the
-- snapshot it read it under, and serves it again while no transaction that changed it has
-- committed since (actors/deals/record-cache.ts): a look-up of this table in that snapshot's
-- range of transactions, instead of the record's joins. Triggers write the rows, so no writer
-- can forget to: test/deals/reputation-record-cache.test.ts checks that every table the
-- record's statements read has one. Rows are kept for an hour (the `deals.records.forget`
-- job); a kept record is trusted for ten minutes of its snapshot at most.
create table agent_record_changes (
  agent_id uuid not null,
  xid xid8 not null default pg_current_xact_id(),
  changed_at timestamptz not null default now(),
  primary key (agent_id, xid)
);
create index agent_record_changes_by_time on agent_record_changes (changed_at);

-- The agents whose records a row of the trigger's table shows, noted for the writing
-- transaction. An insert, an update (its old and new row) and a delete each count.
create function note_agent_record_change() returns trigger language plpgsql as $$
declare
  touched uuid[] := '{}';
  changed jsonb;
begin
  -- The rows as JSON: one function serves tables of different columns.
  foreach changed in array array_remove(array[
    case when tg_op <> 'INSERT' then to_jsonb(old) end,
    case when tg_op <> 'DELETE' then to_jsonb(new) end], null) loop
    if tg_table_name = 'agents' then
      -- An agent's name shows in its own record and in those of its counterparties (as one,
      -- and as the rater of their ratings: a rater is always a counterparty).
      touched := touched || (changed->>'agent_id')::uuid || array(
        select p.counterparty_id from agent_counterparties p
        where p.agent_id = (changed->>'agent_id')::uuid);
    elsif tg_table_name in ('agent_reputation', 'agent_counterparties', 'agent_payment_counts') then
      touched := touched || (changed->>'agent_id')::uuid;
    elsif tg_table_name = 'deal_ratings' then
      touched := touched || (changed->>'ratee_id')::uuid;
    elsif tg_table_name = 'deals' then
      -- Whether a deal has a final payment shows beside its ratings, in its parties' records.
      touched := touched || array(
        select d.agent_id from deal_parties d where d.deal_id = (changed->>'deal_id')::uuid);
    elsif tg_table_name = 'payments' then
      touched := touched || (changed->>'payer_agent_id')::uuid || (changed->>'payee_agent_id')::uuid;
    elsif tg_table_name = 'payment_credits' then
      touched := touched || array(
        select unnest(array[p.payer_agent_id, p.payee_agent_id]) from payments p
        where p.payment_id = (changed->>'payment_id')::uuid);
    else
      raise exception 'note_agent_record_change has no rule for the table %', tg_table_name;
    end if;
  end loop;
  insert into agent_record_changes (agent_id)
  select distinct t.agent_id from unnest(touched) as t(agent_id) where t.agent_id is not null
  order by 1
  on conflict do nothing;
  return null;
end $$;

-- Of agents and deals the record shows a name and whether a payment is final: only updates of
-- those columns (test/deals/reputation-record-cache.test.ts checks the record reads no other
-- column that changes).
create trigger agents_note_record_change
  after insert or delete or update of name on agents
  for each row execute function note_agent_record_change();
create trigger deals_note_record_change
  after insert or delete or update of payment_final on deals
  for each row execute function note_agent_record_change();

-- Every change to these tables' rows is one to the records they show.
do $$
declare
  shown text;
begin
  foreach shown in array array['agent_reputation', 'agent_counterparties', 'agent_payment_counts',
    'deal_ratings', 'payments', 'payment_credits'] loop
    execute format(
      'create trigger %I after insert or update or delete on %I
       for each row execute function note_agent_record_change()',
      shown || '_note_record_change', shown);
  end loop;
end $$;
