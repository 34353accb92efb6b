-- The store's pages read `listings` alone to find the rows they show (storage/store.ts): each
-- listing keeps what the store filters and orders by, copied from its current indexed version
-- in the statement that records the listing (storage/listings.ts upsertListing). A page is
-- then an index scan over these rows, and only the rows shown are looked up in
-- indexed_versions by key.
--   saved_at    the current version's time (the store's order)
--   convention  the convention its header names, as indexed_versions.convention
--   search      the current version's words, as indexed_versions.search
--   field_terms each top-level header field with its value in lower case (and each element's,
--               for a list), as store_field_terms() writes them: the place and price filters
--               look up the pairs of their convention's axis fields (convention_axes) here.

-- One term per (field, value): both JSON-quoted, so no two pairs write the same term. A listing's
-- values are read as the store's axis filters read them, in lower case: `fields ->> field`, or
-- each element of a list.
create function store_field_term(field text, value text) returns text
language sql immutable parallel safe
as $$ select to_json(field)::text || to_json(value)::text $$;

create function store_field_terms(fields jsonb) returns text[]
language sql immutable parallel safe
as $$
  select coalesce(array_agg(distinct t), '{}') from (
    select store_field_term(f.key, lower(fields ->> f.key)) as t
    from jsonb_each(fields) f where fields ->> f.key is not null
    union all
    select store_field_term(f.key, lower(e)) from jsonb_each(fields) f,
      jsonb_array_elements_text(case when jsonb_typeof(f.value) = 'array' then f.value end) e
    where e is not null
  ) terms
$$;

alter table listings add column saved_at timestamptz;
alter table listings add column convention text;
alter table listings add column search tsvector;
alter table listings add column field_terms text[];

update listings l set saved_at = iv.saved_at, convention = iv.convention, search = iv.search,
  field_terms = store_field_terms(iv.fields)
from indexed_versions iv
where iv.workspace_id = l.workspace_id and iv.path = l.path and iv.current;

-- A listing with no current indexed version is not in the store; it keeps the time it was made.
update listings set saved_at = created_at, search = ''::tsvector, field_terms = '{}'
where saved_at is null;

alter table listings alter column saved_at set not null;
alter table listings alter column search set not null;
alter table listings alter column field_terms set not null;

-- The store's order, and the same order within one convention and kind; the words; the terms.
create index listings_store_recent on listings (saved_at desc, workspace_id, path);
create index listings_store_convention on listings (convention, kind, saved_at desc, workspace_id, path);
create index listings_store_search on listings using gin (search);
create index listings_store_field_terms on listings using gin (field_terms);
