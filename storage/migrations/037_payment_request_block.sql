-- Issue 32 §1: a transfer credits a payment only when it is in a block after the chain's head
-- when the payment was requested (actors/payments/chain/crediting-rules.ts), so a transfer made
-- before the request (even before the deal or the agents existed) never pays it.
-- `requested_at_block` is that head, the highest block any configured RPC reported at the
-- request; null: none is known, and then no transfer ever credits the payment.
alter table payments add column requested_at_block bigint check (requested_at_block >= 0);

-- Payments requested before this migration had no head recorded. The nearest bound known is the
-- watcher's cursor on their chain: every block up to it was read already, so a transfer there
-- that paid an open payment has credited it by now. A payment credited already keeps its own
-- transfer creditable after a reorg (its bound is at most the block before its evidence). Where
-- the watcher never ran on the chain, the bound stays null: such a payment is not credited by
-- any transfer and expires (a new one can be requested).
update payments p
set requested_at_block = case
    when p.status in ('seen', 'confirmed')
      and (p.machine -> 'context' -> 'evidence' ->> 'block_number') is not null
      then least(c.last_block,
        (p.machine -> 'context' -> 'evidence' ->> 'block_number')::bigint - 1)
    else c.last_block
  end
from chain_cursor c
where c.chain_id = p.chain_id;
