import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CAPABILITIES } from '../../actors/capabilities.ts';

/**
 * Each table has one owner, a capability or the kernel, and a capability's SQL
 * (storage/<capability>[.ts|/]) names its own tables and the kernel's. The tables are read from
 * the migrations, the names from the SQL text of each storage module. What a capability reads
 * of another's tables it reads through the owner's storage: a reader it exports, or a SQL
 * fragment it exports for a statement that must stay one (`agentNameSql` in
 * storage/agents/agent-names.ts); a capability built below the reader gets it through a port
 * provided at start-up (actors/files/provided-sql.ts).
 */
const root = join(import.meta.dirname, '../..');

/** Every table, by its owner. A table a migration makes that is not here fails the first test. */
const OWNERS: Record<string, string[]> = {
  kernel: [
    'agent_tokens',
    'agent_keys',
    'signature_nonces',
    'changes',
    'change_payloads',
    'feed_heads',
    'idempotency_keys',
    'rate_limits',
    'scheduled_jobs',
    'service_secrets',
  ],
  agents: ['agents'],
  presence: ['agent_presence', 'agent_responsiveness'],
  moderation: ['operator_log'],
  files: [
    'files',
    'file_versions',
    'staged_blocks',
    'storage_usage',
    'upload_reservations',
    'blob_store_identity',
  ],
  receipts: ['signing_keys'],
  index: [
    'indexed_versions',
    'indexed_versions_private',
    'indexed_versions_public',
    'indexed_versions_public_shown',
    'indexed_versions_public_withheld',
  ],
  workspaces: ['workspaces', 'workspace_members', 'invites', 'workspace_log'],
  store: ['listings', 'listing_watches', 'listing_workspaces', 'workspace_listing_counts'],
  chat: ['knocks', 'messages', 'message_reads'],
  conventions: [
    'conventions',
    'convention_axes',
    'convention_key_prefixes',
    'convention_name_pieces',
    'convention_relations',
  ],
  deals: [
    'deals',
    'deal_agreements',
    'deal_deliveries',
    'deal_parties',
    'deal_ratings',
    'agent_reputation',
    'agent_counterparties',
    'agent_record_changes',
  ],
  payments: [
    'payments',
    'payment_credits',
    'payment_receipts',
    'payout_addresses',
    'offchain_payments',
    'chain_cursor',
    'agent_payment_counts',
    'x402_authorizations',
  ],
  email: [
    'mail_accounts',
    'mail_confirmations',
    'mail_inbound',
    'mail_outbox',
    'mail_signups',
    'notification_emails',
  ],
  feedback: ['feedback'],
  webhooks: ['webhooks'],
};

const ownerOf = new Map(
  Object.entries(OWNERS).flatMap(([owner, tables]) => tables.map((table) => [table, owner])),
);

function tablesOfMigrations(): Set<string> {
  const dir = join(root, 'storage/migrations');
  return new Set(
    readdirSync(dir).flatMap((file) =>
      [
        ...readFileSync(join(dir, file), 'utf8').matchAll(
          /create table (?:if not exists )?(\w+)/gi,
        ),
      ].map((match) => (match[1] as string).toLowerCase()),
    ),
  );
}

function modules(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    if (statSync(join(root, path)).isDirectory()) return modules(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** The tables of `tables` that SQL in `text` reads or writes (after from, join, into...). */
function tablesNamed(text: string, tables: Set<string>): Set<string> {
  return new Set(
    [...text.matchAll(/\b(?:from|join|into|update|table|exists)\s+(\w+)/gi)]
      .map((match) => (match[1] as string).toLowerCase())
      .filter((table) => tables.has(table)),
  );
}

/** Other capabilities' tables each capability's storage module names in its SQL. */
function foreignTables(): Record<string, string[]> {
  const tables = tablesOfMigrations();
  const names = CAPABILITIES.map((capability) => capability.name);
  const found: Record<string, string[]> = {};
  for (const path of modules('storage')) {
    const capability = (path.split('/')[1] as string).replace(/\.ts$/, '');
    if (!names.includes(capability)) continue;
    const named = tablesNamed(readFileSync(join(root, path), 'utf8'), tables);
    const foreign = [...named].filter(
      (table) => !['kernel', capability].includes(ownerOf.get(table)!),
    );
    if (foreign.length) found[path] = foreign;
  }
  return found;
}

const test = suite("each capability's SQL names its own tables");

test('every table the migrations make has one owner, a capability of the list or the kernel', () => {
  const owners = new Set(['kernel', ...CAPABILITIES.map((capability) => capability.name)]);
  assert.equal(
    Object.keys(OWNERS).filter((owner) => !owners.has(owner)),
    [],
  );
  const tables = tablesOfMigrations();
  assert.ok(tables.size > 40, `only ${tables.size} tables read from the migrations`);
  assert.equal(
    [...tables].filter((table) => !ownerOf.has(table)),
    [],
    'tables with no owner',
  );
  assert.equal(
    [...ownerOf.keys()].filter((table) => !tables.has(table)),
    [],
    'owned but not made',
  );
});

test('the probe finds a table named after from, join, into, update and exists', () => {
  const tables = tablesOfMigrations();
  const sql = `select 1 from deals d join agents a on true where exists (select 1 from knocks)
    ; insert into payments values (1); update listings set x = 1`;
  assert.equal([...tablesNamed(sql, tables)].sort(), [
    'agents',
    'deals',
    'knocks',
    'listings',
    'payments',
  ]);
});

test('no storage module names another capability’s table: it calls the owner’s reader', () => {
  assert.equal(foreignTables(), {}, "a capability's SQL names another's table");
});

test.run();
