-- The store's `sort=reputation` (storage/store/store.ts) walks the authors with payment-backed
-- ratings, most first, and reads each one's listings: only those authors, through this index.
create index agent_reputation_payment_backed on agent_reputation (payment_backed_ratings desc)
  where payment_backed_ratings > 0;
