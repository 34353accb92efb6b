-- Email (actors/email/, server/mail/): the outbox every message leaves from, the person's
-- notification address, the agents that live by email (their private addresses), sign-ups by
-- email, binding commands waiting for their confirmation, and every message taken in (one row
-- per Message-ID, so a retried delivery runs its command once).

-- Each message is built whole when it is queued (`raw`, the RFC 5322 bytes as they are sent),
-- so that a retry sends the same bytes with the same Message-ID. A row is claimed for a send by
-- moving `next_attempt_at` on and counting the attempt in a commit of its own before the send;
-- `sent_at` is set after it. A crash between the two sends it once more, never more.
create table mail_outbox (
  mail_id uuid primary key,
  -- The Message-ID header without its angle brackets: one message, one row.
  message_id text not null unique,
  -- What it is (answer, sign_up_code, notification_confirm, digest, invite, change...).
  kind text not null,
  -- The agent it concerns, when there is one (a sign-up code has none yet).
  agent_id uuid references agents (agent_id),
  -- The envelope: one recipient per row.
  envelope_from text not null,
  recipient text not null,
  raw bytea not null,
  created_at timestamptz not null,
  attempts integer not null default 0,
  next_attempt_at timestamptz not null,
  sent_at timestamptz,
  -- Given up: a permanent refusal (5xx) or too many attempts. `last_error` says why.
  failed_at timestamptz,
  last_error text
);
create index mail_outbox_due on mail_outbox (next_attempt_at)
  where sent_at is null and failed_at is null;
create index mail_outbox_by_agent on mail_outbox (agent_id, created_at) where agent_id is not null;

-- The person's address for notification digests, one per agent. The code and the link token are
-- kept as SHA-256 only. `digested_seq` is the agent's change sequence number the last digest
-- covered; the next one lists what came after it.
create table notification_emails (
  agent_id uuid primary key references agents (agent_id),
  email text not null,
  status text not null check (status in ('pending', 'confirmed', 'voided', 'unsubscribed')),
  code_hash text,
  link_token_hash text unique,
  wrong_codes integer not null default 0,
  -- The unsubscribe link's key: it works without a token, so it is random and long.
  unsubscribe_key text not null unique,
  requested_at timestamptz not null,
  confirmed_at timestamptz,
  digested_seq bigint not null default 0,
  last_digest_at timestamptz,
  version integer not null default 0
);

-- An agent that lives by email: its private address (`local_part`@MAIL_DOMAIN, long and random:
-- it is the credential) and the address it signed up from, the only one answers go to.
create table mail_accounts (
  agent_id uuid primary key references agents (agent_id),
  local_part text not null unique,
  sender_address text not null,
  -- Each change also sent by email as it happens (set_mail_push); `pushed_seq` is the last sent.
  push_changes boolean not null default false,
  pushed_seq bigint not null default 0,
  created_at timestamptz not null
);
create index mail_accounts_by_sender on mail_accounts (sender_address);

-- A sign-up by email waiting for its code (sent to `sender_address`; kept as SHA-256 only).
create table mail_signups (
  signup_id uuid primary key,
  sender_address text not null,
  name text not null,
  code_hash text not null,
  wrong_codes integer not null default 0,
  status text not null check (status in ('pending', 'done', 'voided')),
  created_at timestamptz not null,
  expires_at timestamptz not null,
  agent_id uuid references agents (agent_id)
);
create index mail_signups_by_sender on mail_signups (sender_address, created_at);

-- A binding command (agree, deliver, rate, request_payment) sent by email, carried out once when
-- its confirmation comes (a reply, or the link). The token is kept as SHA-256 only.
create table mail_confirmations (
  confirmation_id uuid primary key,
  token_hash text not null unique,
  agent_id uuid not null references agents (agent_id),
  operation text not null,
  input jsonb not null,
  status text not null check (status in ('pending', 'done', 'expired')),
  created_at timestamptz not null,
  expires_at timestamptz not null,
  done_at timestamptz,
  -- The command's answer (or problem), sent again to a repeated confirmation.
  answer jsonb
);

-- Every message the SMTP door took, by Message-ID (or a hash of the message when it has none):
-- a retried delivery finds its row and runs nothing again. `auth` is the SPF, DKIM and DMARC
-- verdict as checked on arrival.
create table mail_inbound (
  message_id text primary key,
  received_at timestamptz not null,
  recipient text not null,
  from_address text,
  envelope_from text,
  remote_ip text,
  auth jsonb not null,
  agent_id uuid references agents (agent_id),
  subject text,
  outcome text
);
create index mail_inbound_by_from on mail_inbound (from_address, received_at);

-- Invites sent to a person's address (invite_by_email): the address, and the key of the reply
-- address (`invite-<key>@MAIL_DOMAIN`, SHA-256 only) that joins by replying.
alter table invites add column email text;
alter table invites add column mail_key_hash text unique;
-- invite_by_email's hourly limit counts one agent's email invites.
create index invites_email_by_maker on invites (created_by, created_at) where email is not null;
