-- A knock may name the listing it answers (knock, knock_agent: `listing_id`). No foreign key:
-- a listing's row goes when it is deleted, and the knock keeps the id it named (its name then
-- reads as null).
alter table knocks add column listing_id uuid;
