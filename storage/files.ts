import type { Queryable } from './driver.ts';

export interface FileRow {
  path: string;
  version: number;
  sha256: string;
  size: number;
  contentType: string;
  savedAt: Date;
  savedBy: string;
  savedByName: string;
  /** Why the current version is not in the index, or null. */
  indexError: string | null;
}

interface RawFile extends Record<string, unknown> {
  path: string;
  version: number;
  sha256: string;
  size: number;
  content_type: string;
  saved_at: Date;
  saved_by: string;
  saved_by_name: string;
  index_error: string | null;
}

const toFile = (raw: RawFile): FileRow => ({
  path: raw.path,
  version: raw.version,
  sha256: raw.sha256,
  size: raw.size,
  contentType: raw.content_type,
  savedAt: raw.saved_at,
  savedBy: raw.saved_by,
  savedByName: raw.saved_by_name,
  indexError: raw.index_error,
});

const fileColumns = `f.path, f.version, f.sha256, f.size, f.content_type, f.saved_at, f.saved_by,
  a.name as saved_by_name, f.index_error`;

/** The current version of a live path, or null. */
export async function findFile(db: Queryable, workspaceId: string, path: string) {
  const [raw] = await db.query<RawFile>(
    `select ${fileColumns} from files f join agents a on a.agent_id = f.saved_by
     where f.workspace_id = $1 and f.path = $2`,
    [workspaceId, path],
  );
  return raw ? toFile(raw) : null;
}

/** One version of a path whose bytes are kept (a save), or null. */
export async function findKeptVersion(
  db: Queryable,
  workspaceId: string,
  path: string,
  version: number,
): Promise<{ sha256: string; size: number } | null> {
  const [row] = await db.query<{ sha256: string; size: number }>(
    `select sha256, size from file_versions
     where workspace_id = $1 and path = $2 and version = $3 and action = 'save' and bytes_kept`,
    [workspaceId, path, version],
  );
  return row ?? null;
}

/** The newest version number a path has had (saves and deletes), 0 for none. */
export async function lastVersion(db: Queryable, workspaceId: string, path: string) {
  const [row] = await db.query<{ version: number }>(
    `select coalesce(max(version), 0)::int8 as version from file_versions
     where workspace_id = $1 and path = $2`,
    [workspaceId, path],
  );
  return row?.version ?? 0;
}

export async function insertFileVersion(
  tx: Queryable,
  version: {
    workspaceId: string;
    path: string;
    version: number;
    action: 'save' | 'delete';
    sha256: string;
    size: number;
    bytesKept: boolean;
    agentId: string;
    savedAt: Date;
    receipt: unknown;
  },
): Promise<void> {
  await tx.query(
    `insert into file_versions (workspace_id, path, version, action, sha256, size, bytes_kept,
       agent_id, saved_at, receipt)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::text::jsonb)`,
    [
      version.workspaceId,
      version.path,
      version.version,
      version.action,
      version.sha256,
      version.size,
      version.bytesKept,
      version.agentId,
      version.savedAt,
      JSON.stringify(version.receipt),
    ],
  );
}

/** Only the newest version of a path that is not markdown-with-header keeps its bytes. */
export async function forgetOlderBytes(
  tx: Queryable,
  workspaceId: string,
  path: string,
  keepVersion: number,
): Promise<void> {
  await tx.query(
    `update file_versions set bytes_kept = false
     where workspace_id = $1 and path = $2 and version < $3 and bytes_kept`,
    [workspaceId, path, keepVersion],
  );
}

export async function upsertFile(
  tx: Queryable,
  file: {
    workspaceId: string;
    path: string;
    version: number;
    sha256: string;
    size: number;
    contentType: string;
    savedAt: Date;
    savedBy: string;
    indexError: string | null;
  },
): Promise<void> {
  await tx.query(
    `insert into files (workspace_id, path, version, sha256, size, content_type, saved_at, saved_by,
       index_error)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     on conflict (workspace_id, path) do update set version = excluded.version,
       sha256 = excluded.sha256, size = excluded.size, content_type = excluded.content_type,
       saved_at = excluded.saved_at, saved_by = excluded.saved_by,
       index_error = excluded.index_error`,
    [
      file.workspaceId,
      file.path,
      file.version,
      file.sha256,
      file.size,
      file.contentType,
      file.savedAt,
      file.savedBy,
      file.indexError,
    ],
  );
}

export async function removeFile(tx: Queryable, workspaceId: string, path: string) {
  await tx.query('delete from files where workspace_id = $1 and path = $2', [workspaceId, path]);
}

/** Live files under `prefix`, by path, after `afterPath`. */
export async function listFiles(
  db: Queryable,
  workspaceId: string,
  prefix: string,
  afterPath: string | null,
  limit: number,
): Promise<FileRow[]> {
  const rows = await db.query<RawFile>(
    `select ${fileColumns} from files f join agents a on a.agent_id = f.saved_by
     where f.workspace_id = $1 and left(f.path, length($2)) = $2
       and ($3::text is null or f.path collate "C" > $3::text collate "C")
     order by f.path collate "C" limit $4`,
    [workspaceId, prefix, afterPath, limit],
  );
  return rows.map(toFile);
}

/**
 * Every receipt of a workspace's chain, newest first: file saves and deletes, and its deals'
 * agreements, deliveries and ratings (of deal files at `path`, when a path is given).
 */
export async function listReceipts(
  db: Queryable,
  workspaceId: string,
  path: string | null,
  after: { at: Date; receiptId: string } | null,
  limit: number,
): Promise<{ receipt: unknown; at: Date; receiptId: string }[]> {
  const rows = await db.query<{ receipt: unknown; at: Date; receipt_id: string }>(
    `select receipt, at, receipt_id from (
       select receipt, saved_at as at, (receipt ->> 'receipt_id')::uuid as receipt_id, path
       from file_versions where workspace_id = $1
       union all
       select a.receipt, a.agreed_at, a.agreement_id, d.path
       from deal_agreements a join deals d on d.deal_id = a.deal_id where d.workspace_id = $1
       union all
       select x.receipt, x.delivered_at, x.delivery_id, d.path
       from deal_deliveries x join deals d on d.deal_id = x.deal_id where d.workspace_id = $1
       union all
       select r.receipt, r.rated_at, r.rating_id, d.path
       from deal_ratings r join deals d on d.deal_id = r.deal_id where d.workspace_id = $1
     ) chain
     where ($2::text is null or path = $2::text)
       and ($3::timestamptz is null or (at, receipt_id) < ($3::timestamptz, $4::uuid))
     order by at desc, receipt_id desc limit $5`,
    [workspaceId, path, after?.at ?? null, after?.receiptId ?? null, limit],
  );
  return rows.map((row) => ({ receipt: row.receipt, at: row.at, receiptId: row.receipt_id }));
}

export async function readLastReceipt(tx: Queryable, workspaceId: string): Promise<unknown> {
  const [row] = await tx.query<{ last_receipt: unknown }>(
    'select last_receipt from workspaces where workspace_id = $1',
    [workspaceId],
  );
  return row?.last_receipt ?? null;
}

export async function writeLastReceipt(tx: Queryable, workspaceId: string, receipt: unknown) {
  await tx.query('update workspaces set last_receipt = $2::text::jsonb where workspace_id = $1', [
    workspaceId,
    JSON.stringify(receipt),
  ]);
}

/** Adds `delta` bytes to an agent's use; returns its use afterwards. Locks the agent's row. */
export async function addStorageUse(
  tx: Queryable,
  agentId: string,
  delta: number,
): Promise<number> {
  const [row] = await tx.query<{ used_bytes: number }>(
    `insert into storage_usage (agent_id, used_bytes) values ($1, greatest($2::int8, 0))
     on conflict (agent_id) do update set used_bytes = greatest(storage_usage.used_bytes + $2::int8, 0)
     returning used_bytes`,
    [agentId, delta],
  );
  return row?.used_bytes ?? 0;
}

/**
 * In one round trip, what an agent holds before it saves `path`: its storage use, its staged
 * blocks live at `now`, and the size of its own current file at `path` (which the save gives
 * back).
 */
export async function readHeldBytes(
  db: Queryable,
  at: { workspaceId: string; path: string; agentId: string; now: Date },
): Promise<{ used: number; staged: number; replaced: number }> {
  const [row] = await db.query<{ used: number; staged: number; replaced: number }>(
    `select
       coalesce((select used_bytes from storage_usage where agent_id = $3), 0)::int8 as used,
       coalesce((select sum(size) from staged_blocks where agent_id = $3 and expires_at > $4),
         0)::int8 as staged,
       coalesce((select size from files
         where workspace_id = $1 and path = $2 and saved_by = $3), 0)::int8 as replaced`,
    [at.workspaceId, at.path, at.agentId, at.now],
  );
  return row ?? { used: 0, staged: 0, replaced: 0 };
}

export async function readStorageUse(db: Queryable, agentId: string): Promise<number> {
  const [row] = await db.query<{ used_bytes: number }>(
    'select used_bytes from storage_usage where agent_id = $1',
    [agentId],
  );
  return row?.used_bytes ?? 0;
}
