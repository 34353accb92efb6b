-- Room in feed_heads' pages for each head's next version. Every change moves its agent's head
-- (storage/kernel/changes.ts), and a listing told to 1,000 watchers moves 1,000 heads in one
-- statement. On full pages (the default fillfactor, 100) those updates found no room beside
-- the old version, so each moved to another page and wrote a new index entry as well: the
-- save's last statement took 16.2 ms on PGlite, 13.6 to 13.9 ms with this (.probe watch-trace,
-- medians of 20 posts, two runs each). 40, not 50: a page half full of heads has no room for
-- the next version of every one of them once the line pointers of the last round are counted
-- (test/storage/contract.ts holds each head to its page over three fan-outs). PGlite runs no
-- autovacuum, but a page is pruned as it is read, so the table stays at about 2.5 times its
-- packed size: some 150 bytes an agent. The rewrite puts the heads in agent-id order, the
-- order in which a fan-out locks them.
alter table feed_heads set (fillfactor = 40);
cluster feed_heads using feed_heads_pkey;
