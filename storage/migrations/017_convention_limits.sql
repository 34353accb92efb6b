-- Conventions without bound (issue 17): each agent's count of registered conventions, a page
-- order served by an index, and the near-duplicate rules (actors/convention-rules.ts) answered
-- by indexed lookups instead of a read of every convention. storage/convention-keys.ts
-- computes the same keys for every convention written from now on; this backfills the rows
-- that are already here.

-- register_convention counts the caller's conventions (the per-agent cap).
create index conventions_by_author on conventions (author_id);

-- GET /conventions pages in this order: the built-in ones (no author), the placed ones by
-- their cell, then the rest by name (storage/conventions.ts, LIST_ORDER).
create index conventions_list_order on conventions (
  (case when author_id is null then 0 when status = 'placed' then 1 else 2 end),
  (case when status = 'placed' then coalesce(placement, '{}'::text[]) else '{}'::text[] end),
  name
);

-- Rule 1 (the same name with separators ignored) and rule 3 (the same words in another order).
alter table conventions add column squashed_name text;
alter table conventions add column name_words text;
update conventions set
  squashed_name = regexp_replace(lower(name), '[-_\s]+', '', 'g'),
  name_words = (
    select coalesce(string_agg(word, ' ' order by word collate "C"), '')
    from (
      select case when length(part) > 3 and right(part, 1) = 's' then left(part, -1) else part end
        as word
      from regexp_split_to_table(lower(name), '[-_\s]+') as part
      where part <> ''
    ) words
  );
alter table conventions alter column squashed_name set not null;
alter table conventions alter column name_words set not null;
create index conventions_by_squashed_name on conventions (squashed_name);
create index conventions_by_name_words on conventions (name_words);

-- Rule 2 (two edits apart): each name (separators removed, 5 characters or more) in three
-- pieces cut at places fixed by its length. A name within two edits holds one of them intact,
-- at most two places away: a proposal looks up the pieces it could share.
create table convention_name_pieces (
  name_length integer not null,
  piece smallint not null,
  piece_text text not null,
  convention text not null references conventions (name),
  primary key (name_length, piece, piece_text, convention)
);
insert into convention_name_pieces (name_length, piece, piece_text, convention)
select length(squashed_name), piece,
  substr(squashed_name, (piece * length(squashed_name)) / 3 + 1,
    ((piece + 1) * length(squashed_name)) / 3 - (piece * length(squashed_name)) / 3),
  name
from conventions, generate_series(0, 2) as piece
where length(squashed_name) >= 5;

-- Rule 4 (80% of the same dimension keys): the first n - ceil(0.8 n) + 1 of each convention's
-- n distinct keys, ordered by md5. Two conventions sharing 80% of their keys share one of
-- these (the prefix filter); `key_count` narrows them to sets of a size that could.
create table convention_key_prefixes (
  key text not null,
  key_count integer not null,
  convention text not null references conventions (name),
  primary key (key, key_count, convention)
);
insert into convention_key_prefixes (key, key_count, convention)
select key, n, name
from (
  select c.name, k.key, count(*) over (partition by c.name) as n,
    row_number() over (partition by c.name order by md5(k.key) collate "C") as rank
  from conventions c,
    lateral (
      select distinct d ->> 'key' as key from jsonb_array_elements(c.dimensions) d
      where d ->> 'key' is not null
    ) k
) ranked
where rank <= n - ceil(0.8 * n) + 1;
