-- A watch may follow its agent's own listings (watch_listings with match_my_listings): a new
-- listing reaches the watcher when post_listing would name one of the watcher's current listings
-- among its matches. Such a watch names no other criterion.
alter table listing_watches add column match_my_listings boolean not null default false;
create index listing_watches_following_mine on listing_watches (agent_id) where match_my_listings;
