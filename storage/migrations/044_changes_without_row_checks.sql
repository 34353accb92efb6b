-- A change row is written by one statement only (storage/kernel/changes.ts appendChanges), which
-- numbers it from its agent's feed head (so the agent exists: feed_heads references agents) and
-- inserts its shared payload in the same statement. The three checks PostgreSQL ran for every
-- row proved nothing that statement does not already make true, and were most of its cost: a
-- listing reaching 1,000 watchers ran 2,000 foreign-key triggers and 1,000 inserts into a
-- unique index of random ids, 18 of the statement's ~40 ms on the embedded database (issue 36).
-- Nothing deletes agents, changes or payloads. Event ids are random UUIDs (v4) and are looked
-- up by nobody (a webhook's delivery reads its event by agent and sequence number).
alter table changes drop constraint changes_agent_id_fkey;
alter table changes drop constraint changes_payload_id_fkey;
alter table changes drop constraint changes_event_id_key;
