import { workspaceVisibilitySql } from '../workspaces/workspace-visibility.ts';
import type { Queryable } from '../driver.ts';

/**
 * SQL for the name of the agent whose id the SQL expression `agentId` gives, as a table of one
 * column, `name` (no row for an id no agent has), to join lateral. The agents capability's
 * (storage/agents/agent-names.ts agentNameSql): agents build on files, so the caller passes it.
 */
export type AgentNameSql = (agentId: string) => string;

/**
 * SQL true when the index read the version the three SQL expressions name. The index's
 * (storage/index/read-versions.ts versionIsIndexedSql): the index builds on files, so the caller
 * passes it.
 */
export type VersionIsIndexedSql = (version: {
  workspaceId: string;
  path: string;
  version: string;
}) => string;

/** A live path's current version. */
export interface CurrentFile {
  /** The NFC key every lookup compares (protocol/files/path.ts parseFileName). */
  path: string;
  /** The spelling the current version was saved under (migration 043), which listings show. */
  pathAsSaved: string;
  version: number;
  sha256: string;
  size: number;
  contentType: string;
  savedAt: Date;
  savedBy: string;
  /** Why the current version is not in the index, or null. */
  indexError: string | null;
}

/** A live path's current version, with the name of who saved it (list_files). */
export interface FileRow extends CurrentFile {
  savedByName: string;
}

interface RawFile extends Record<string, unknown> {
  path: string;
  path_as_saved: string | null;
  version: number;
  sha256: string;
  size: number;
  content_type: string;
  saved_at: Date;
  saved_by: string;
  index_error: string | null;
}

const toCurrentFile = (raw: RawFile): CurrentFile => ({
  path: raw.path,
  pathAsSaved: raw.path_as_saved ?? raw.path,
  version: raw.version,
  sha256: raw.sha256,
  size: raw.size,
  contentType: raw.content_type,
  savedAt: raw.saved_at,
  savedBy: raw.saved_by,
  indexError: raw.index_error,
});

const fileColumns = `f.path, f.path_as_saved, f.version, f.sha256, f.size, f.content_type,
  f.saved_at, f.saved_by, f.index_error`;

/** The current version of a live path, or null. */
export async function findFile(
  db: Queryable,
  workspaceId: string,
  path: string,
): Promise<CurrentFile | null> {
  // Every version's saver is an agent (files.saved_by references agents): no need to join them.
  const [raw] = await db.query<RawFile>(
    `select ${fileColumns} from files f where f.workspace_id = $1 and f.path = $2`,
    [workspaceId, path],
  );
  return raw ? toCurrentFile(raw) : null;
}

/**
 * What a save needs of its path, in one statement: the current version, the last number, and
 * the versions whose bytes the save lets go (rule `every_kept_byte`: every version the index
 * did not read keeps its bytes only while it is current; all of them are older than the save).
 * The letting go (of the bytes and the metadata kept beside them) is written here: a save
 * refused after this rolls it back with its transaction.
 */
export interface SaveState {
  current: { version: number; sha256: string; size: number; savedAt: Date; savedBy: string } | null;
  /** The highest version number the path has had (0: none), deletes included. */
  lastVersion: number;
  letGo: LetGoVersion[];
}

export async function beginSave(
  tx: Queryable,
  workspaceId: string,
  path: string,
  versionIsIndexedSql: VersionIsIndexedSql,
): Promise<SaveState> {
  const indexed = versionIsIndexedSql({
    workspaceId: 'v.workspace_id',
    path: 'v.path',
    version: 'v.version',
  });
  const [row] = await tx.query<{
    last_version: number;
    version: number | null;
    sha256: string | null;
    size: number | null;
    saved_at: Date | null;
    saved_by: string | null;
    let_go: RawLetGo[] | null;
  }>(
    `with let_go as (
       update file_versions v set bytes_kept = false, metadata = null, content_settings = null,
         metadata_bytes = 0
       from file_versions counted
       where v.workspace_id = $1 and v.path = $2 and v.bytes_kept
         and counted.workspace_id = v.workspace_id and counted.path = v.path
         and counted.version = v.version
         and not ${indexed}
       returning v.agent_id, v.size, v.sha256, counted.metadata_bytes
     )
     select (select coalesce(max(v.version), 0) from file_versions v
         where v.workspace_id = $1 and v.path = $2)::int8 as last_version,
       f.version, f.sha256, f.size, f.saved_at, f.saved_by,
       (select json_agg(let_go) from let_go) as let_go
     from (select 1) one left join files f on f.workspace_id = $1 and f.path = $2`,
    [workspaceId, path],
  );
  const current =
    row && row.sha256 !== null
      ? {
          version: row.version ?? 0,
          sha256: row.sha256,
          size: row.size ?? 0,
          savedAt: row.saved_at ?? new Date(0),
          savedBy: row.saved_by ?? '',
        }
      : null;
  return {
    current,
    lastVersion: row?.last_version ?? 0,
    letGo: (row?.let_go ?? []).map(toLetGo),
  };
}

/** What Azure clients keep beside a version's bytes (migrations 019 and 043). */
export interface VersionProperties {
  /** Base64 of the MD5 of the bytes; null for versions saved before it was kept. */
  contentMd5: string | null;
  /** The `x-ms-meta-*` pairs sent with the save, names as sent. */
  metadata: Record<string, string>;
  /** The content headers sent with the save ({} for none). */
  contentSettings: ContentSettings;
}

/**
 * The content headers an Azure client sets on a blob (`x-ms-blob-content-type` and its four
 * siblings), as sent; one not sent is absent (the type is then inferred from the path).
 */
export interface ContentSettings {
  contentType?: string;
  contentEncoding?: string;
  contentLanguage?: string;
  contentDisposition?: string;
  cacheControl?: string;
}

/** The settings in the order they are written, so that their JSON is the same every time. */
export const CONTENT_SETTINGS = [
  'contentType',
  'contentEncoding',
  'contentLanguage',
  'contentDisposition',
  'cacheControl',
] as const satisfies readonly (keyof ContentSettings)[];

/** A version whose bytes are kept (a save), with its properties. */
export interface KeptVersion extends VersionProperties {
  version: number;
  sha256: string;
  size: number;
  savedAt: Date;
}

interface RawKept extends Record<string, unknown> {
  version: number;
  sha256: string;
  size: number;
  saved_at: Date;
  content_md5: string | null;
  metadata: Record<string, string> | null;
  content_settings: ContentSettings | null;
}

const toKept = (row: RawKept): KeptVersion => ({
  version: row.version,
  sha256: row.sha256,
  size: row.size,
  savedAt: row.saved_at,
  contentMd5: row.content_md5,
  metadata: row.metadata ?? {},
  contentSettings: row.content_settings ?? {},
});

/**
 * One version of a path whose bytes are kept (a save), or null; the current one when `version`
 * is null (and the path lives).
 */
export async function findKeptVersion(
  db: Queryable,
  workspaceId: string,
  path: string,
  version: number | null,
): Promise<KeptVersion | null> {
  const [row] = await db.query<RawKept>(
    version === null
      ? `select v.version, v.sha256, v.size, v.saved_at, v.content_md5, v.metadata,
           v.content_settings
         from files f join file_versions v
           on v.workspace_id = f.workspace_id and v.path = f.path and v.version = f.version
         where f.workspace_id = $1 and f.path = $2`
      : `select version, sha256, size, saved_at, content_md5, metadata, content_settings
         from file_versions where workspace_id = $1 and path = $2 and version = $3 and action = 'save' and bytes_kept`,
    version === null ? [workspaceId, path] : [workspaceId, path, version],
  );
  return row ? toKept(row) : null;
}

/** The properties of the given versions of paths, by `path` then version (one round trip). */
export async function readVersionProperties(
  db: Queryable,
  workspaceId: string,
  versions: readonly { path: string; version: number }[],
): Promise<Map<string, VersionProperties>> {
  if (versions.length === 0) return new Map();
  const rows = await db.query<{
    path: string;
    version: number;
    content_md5: string | null;
    metadata: Record<string, string> | null;
    content_settings: ContentSettings | null;
  }>(
    `select v.path, v.version, v.content_md5, v.metadata, v.content_settings
     from file_versions v
     join unnest($2::text[], $3::int4[]) as wanted (path, version)
       on wanted.path = v.path and wanted.version = v.version
     where v.workspace_id = $1`,
    [workspaceId, versions.map((v) => v.path), versions.map((v) => v.version)],
  );
  return new Map(
    rows.map((row) => [
      `${row.version}:${row.path}`,
      {
        contentMd5: row.content_md5,
        metadata: row.metadata ?? {},
        contentSettings: row.content_settings ?? {},
      },
    ]),
  );
}

/**
 * The properties kept beside a version as they are written (null for none), and the bytes they
 * count against the version's author (rule `every_kept_byte`): the JSON written of both, kept in
 * `metadata_bytes` (migrations 042, 043) so that what is given back is what was counted.
 */
export function keptProperties(
  properties: Partial<Pick<VersionProperties, 'metadata' | 'contentSettings'>>,
): { metadataJson: string | null; settingsJson: string | null; bytes: number } {
  const { metadata, contentSettings } = properties;
  const metadataJson =
    metadata && Object.keys(metadata).length > 0 ? JSON.stringify(metadata) : null;
  const settings: ContentSettings = {};
  for (const name of CONTENT_SETTINGS) {
    const value = contentSettings?.[name];
    if (value !== undefined) settings[name] = value;
  }
  const settingsJson = Object.keys(settings).length > 0 ? JSON.stringify(settings) : null;
  const bytes = [metadataJson, settingsJson].reduce(
    (sum, json) => sum + (json === null ? 0 : Buffer.byteLength(json, 'utf8')),
    0,
  );
  return { metadataJson, settingsJson, bytes };
}

/**
 * Replaces the metadata of the current version of a live path (Azure's Set Blob Metadata: the
 * bytes, and so the version and its receipt, stay as they are; so do its content settings);
 * null when the path is gone, else who saved the version and how many bytes it keeps beside
 * them more (or fewer) than before.
 */
export async function replaceCurrentMetadata(
  tx: Queryable,
  workspaceId: string,
  path: string,
  metadata: Record<string, string>,
): Promise<{ agentId: string; addedBytes: number } | null> {
  const current = await findKeptVersion(tx, workspaceId, path, null);
  if (!current) return null;
  const kept = keptProperties({ metadata, contentSettings: current.contentSettings });
  const [row] = await tx.query<{ agent_id: string; added: number }>(
    `update file_versions v set metadata = $3::text::jsonb, metadata_bytes = $4
     from files f, file_versions before
     where f.workspace_id = $1 and f.path = $2
       and v.workspace_id = f.workspace_id and v.path = f.path and v.version = f.version
       and before.workspace_id = v.workspace_id and before.path = v.path
       and before.version = v.version
     returning v.agent_id, ($4 - before.metadata_bytes)::int8 as added`,
    [workspaceId, path, kept.metadataJson, kept.bytes],
  );
  return row ? { agentId: row.agent_id, addedBytes: Number(row.added) } : null;
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
    /** Saves only: base64 of the MD5 of the bytes, and the properties sent with them. */
    contentMd5?: string | null;
    metadata?: Record<string, string> | null;
    contentSettings?: ContentSettings;
  },
  /**
   * A save's row in `files` (the path's current version, saved by `version.agentId`), written in
   * the same statement; a delete passes none.
   */
  current?: { contentType: string; indexError: string | null; pathAsSaved: string },
): Promise<void> {
  const kept = keptProperties({
    metadata: version.metadata ?? {},
    contentSettings: version.contentSettings ?? {},
  });
  const insertVersion = `insert into file_versions (workspace_id, path, version, action, sha256,
       size, bytes_kept, agent_id, saved_at, receipt, content_md5, metadata, metadata_bytes,
       content_settings)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::text::jsonb, $11, $12::text::jsonb, $13,
       $14::text::jsonb)`;
  await tx.query(
    current
      ? `with saved as (${insertVersion})
         insert into files (workspace_id, path, version, sha256, size, content_type, saved_at,
           saved_by, index_error, path_as_saved)
         values ($1, $2, $3, $5, $6, $15, $9, $8, $16, nullif($17, $2))
         ${UPSERT_FILE}`
      : insertVersion,
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
      version.contentMd5 ?? null,
      kept.metadataJson,
      kept.bytes,
      kept.settingsJson,
      ...(current ? [current.contentType, current.indexError, current.pathAsSaved] : []),
    ],
  );
}

const UPSERT_FILE = `on conflict (workspace_id, path) do update set version = excluded.version,
       sha256 = excluded.sha256, size = excluded.size, content_type = excluded.content_type,
       saved_at = excluded.saved_at, saved_by = excluded.saved_by,
       index_error = excluded.index_error, path_as_saved = excluded.path_as_saved`;

/**
 * A version whose bytes were let go: whose quota gets back its bytes and the metadata kept
 * beside them (`metadataBytes`), and which blob may go.
 */
export interface LetGoVersion {
  agentId: string;
  size: number;
  metadataBytes: number;
  sha256: string;
}

interface RawLetGo extends Record<string, unknown> {
  agent_id: string;
  size: number | string;
  metadata_bytes: number | string;
  sha256: string;
}

const toLetGo = (row: RawLetGo): LetGoVersion => ({
  agentId: row.agent_id,
  size: Number(row.size),
  metadataBytes: Number(row.metadata_bytes),
  sha256: row.sha256,
});

/**
 * Lets go of the bytes of every version of a path (a delete), and of the metadata kept beside
 * them (up to 8 KiB a version, counted with them: rule `every_kept_byte`); the version's row, its
 * receipt and fingerprint stay.
 */
export async function forgetAllVersions(
  tx: Queryable,
  workspaceId: string,
  path: string,
): Promise<LetGoVersion[]> {
  const rows = await tx.query<RawLetGo>(
    `update file_versions v set bytes_kept = false, metadata = null, content_settings = null,
       metadata_bytes = 0
     from file_versions counted
     where v.workspace_id = $1 and v.path = $2 and v.bytes_kept
       and counted.workspace_id = v.workspace_id and counted.path = v.path
       and counted.version = v.version
     returning v.agent_id, v.size, v.sha256, counted.metadata_bytes`,
    [workspaceId, path],
  );
  return rows.map(toLetGo);
}

export async function removeFile(tx: Queryable, workspaceId: string, path: string) {
  await tx.query('delete from files where workspace_id = $1 and path = $2', [workspaceId, path]);
}

/**
 * Live files under `prefix`, by path, after `afterPath`. For a caller outside the workspace
 * (`outsider`), the files moderation withholds from everyone but its members are left out, as
 * reading them is refused: the rule is index_row_withheld (migration 039), written once.
 */
export async function listFiles(
  db: Queryable,
  workspaceId: string,
  prefix: string,
  afterPath: string | null,
  limit: number,
  outsider: boolean,
  agentNameSql: AgentNameSql,
): Promise<FileRow[]> {
  const withheld = outsider
    ? `and not index_row_withheld(f.workspace_id, f.path,
         ${workspaceVisibilitySql('f.workspace_id')})`
    : '';
  const rows = await db.query<RawFile & { saved_by_name: string }>(
    `select ${fileColumns}, saver.name as saved_by_name
     from files f join lateral ${agentNameSql('f.saved_by')} saver on true
     where f.workspace_id = $1 and left(f.path, length($2)) = $2
       and ($3::text is null or f.path collate "C" > $3::text collate "C") ${withheld}
     order by f.path collate "C" limit $4`,
    [workspaceId, prefix, afterPath, limit],
  );
  return rows.map((raw) => ({ ...toCurrentFile(raw), savedByName: raw.saved_by_name }));
}

/**
 * Which of `paths` moderation withholds from everyone but the workspace's members (a listing the
 * operator hid, a suspended owner's public workspace): index_row_withheld (migration 039), the
 * one place the rule is written, asked of each path.
 */
export async function withheldPaths(
  db: Queryable,
  workspaceId: string,
  paths: readonly string[],
): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  const rows = await db.query<{ path: string }>(
    `select p.path from unnest($2::text[]) as p (path)
     where index_row_withheld($1, p.path, ${workspaceVisibilitySql('$1')})`,
    [workspaceId, [...new Set(paths)]],
  );
  return new Set(rows.map((row) => row.path));
}

/** A change of an agent's storage use: its kept bytes, and the part of them that is current. */
export interface UseDelta {
  kept: number;
  current: number;
}

/** Adds `delta` to an agent's use; returns its kept bytes afterwards. Locks the agent's row. */
export async function addStorageUse(
  tx: Queryable,
  agentId: string,
  delta: UseDelta,
): Promise<number> {
  const [row] = await tx.query<{ used_bytes: number }>(
    `insert into storage_usage (agent_id, used_bytes, current_bytes)
     values ($1, greatest($2::int8, 0), greatest($3::int8, 0))
     on conflict (agent_id) do update
       set used_bytes = greatest(storage_usage.used_bytes + $2::int8, 0),
         current_bytes = greatest(storage_usage.current_bytes + $3::int8, 0)
     returning used_bytes`,
    [agentId, delta.kept, delta.current],
  );
  return row?.used_bytes ?? 0;
}
