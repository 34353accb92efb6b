/**
 * Room reserved by uploads in progress (migrations/014_every_kept_byte.sql), and what counts
 * against an agent's quota: its kept versions, its staged blocks and its reservations.
 */
import { ADVISORY_LOCK_CLASS } from '../locks.ts';
import type { Queryable } from '../driver.ts';
import type { VersionIsIndexedSql } from './files.ts';

export interface Reservation {
  reservationId: string;
  agentId: string;
  bytes: number;
  expiresAt: Date;
}

/** What counts against an agent's quota at `now`, each part in bytes. */
export interface HeldBytes {
  /** Every version whose bytes are kept (`storage_usage.used_bytes`). */
  kept: number;
  /** Blocks staged through storage links, live at `now`. */
  staged: number;
  /** Uploads in progress, live at `now`. */
  reserved: number;
}

/**
 * Locks the agent's usage row (making it if missing) until the transaction ends: every
 * reservation, staged block and save of one agent takes its turn here, in every process.
 */
export async function lockStorageUse(tx: Queryable, agentId: string): Promise<void> {
  await tx.query(
    `insert into storage_usage (agent_id) values ($1)
     on conflict (agent_id) do update set used_bytes = storage_usage.used_bytes`,
    [agentId],
  );
}

/**
 * What the agent holds, but for one reservation and one staged block that are being replaced.
 * Call it after `lockStorageUse`, in a statement of its own: under READ COMMITTED a statement
 * sees what was committed before it began, so it sees what the lock waited for.
 */
export async function readHeldBytes(
  db: Queryable,
  at: {
    agentId: string;
    now: Date;
    exceptReservation?: string | undefined;
    exceptBlock?: { workspaceId: string; path: string; blockId: string } | undefined;
  },
): Promise<HeldBytes> {
  const block = at.exceptBlock;
  const [row] = await db.query<{ kept: number; staged: number; reserved: number }>(
    `select
       coalesce((select used_bytes from storage_usage where agent_id = $1), 0)::int8 as kept,
       coalesce((select sum(size) from staged_blocks
         where agent_id = $1 and expires_at > $2
           and ($4::uuid is null or not (workspace_id = $4 and path = $5 and block_id = $6))),
         0)::int8 as staged,
       coalesce((select sum(bytes) from upload_reservations
         where agent_id = $1 and expires_at > $2
           and ($3::uuid is null or reservation_id <> $3)), 0)::int8 as reserved`,
    [
      at.agentId,
      at.now,
      at.exceptReservation ?? null,
      block?.workspaceId ?? null,
      block?.path ?? '',
      block?.blockId ?? '',
    ],
  );
  return row ?? { kept: 0, staged: 0, reserved: 0 };
}

/**
 * Takes or grows a reservation in one statement, if the room left allows `total` bytes: the
 * room is the quota less what the agent holds (but for this reservation and the block it
 * replaces), plus what a save of `givesBackFor` would give back (the agent's own current
 * version there, if the index did not read it: it is let go). Reserves `wanted` bytes, or the
 * room if less; answers the bytes reserved, or null when `total` does not fit (nothing written).
 * Call it after `lockStorageUse`, in a statement of its own (see `readHeldBytes`). Whether the
 * index read a version is the index's to say (`versionIsIndexedSql`, given by the caller).
 */
export async function reserveWithinRoom(
  tx: Queryable,
  reservation: Reservation & {
    now: Date;
    quota: number;
    total: number;
    exceptBlock?: { workspaceId: string; path: string; blockId: string } | undefined;
    givesBackFor?: { workspaceId: string; path: string } | undefined;
    versionIsIndexedSql: VersionIsIndexedSql;
  },
): Promise<number | null> {
  const block = reservation.exceptBlock;
  const indexed = reservation.versionIsIndexedSql({
    workspaceId: 'f.workspace_id',
    path: 'f.path',
    version: 'f.version',
  });
  const [row] = await tx.query<{ bytes: number }>(
    `with held as (
       select
         coalesce((select used_bytes from storage_usage where agent_id = $1), 0)::int8
         + coalesce((select sum(size) from staged_blocks
             where agent_id = $1 and expires_at > $2
               and ($4::uuid is null or not (workspace_id = $4 and path = $5 and block_id = $6))),
             0)::int8
         + coalesce((select sum(bytes) from upload_reservations
             where agent_id = $1 and expires_at > $2 and reservation_id <> $3), 0)::int8
         as bytes,
         coalesce((select f.size from files f
           where f.workspace_id = $7::uuid and f.path = $8 and f.saved_by = $1
             and not ${indexed}), 0)::int8 as gives_back
     ),
     room as (select $9::int8 - held.bytes + held.gives_back as bytes from held)
     insert into upload_reservations (reservation_id, agent_id, bytes, expires_at)
     select $3, $1, least($10::int8, room.bytes), $11 from room where room.bytes >= $12::int8
     on conflict (reservation_id) do update set bytes = excluded.bytes,
       expires_at = excluded.expires_at
     returning bytes`,
    [
      reservation.agentId,
      reservation.now,
      reservation.reservationId,
      block?.workspaceId ?? null,
      block?.path ?? '',
      block?.blockId ?? '',
      reservation.givesBackFor?.workspaceId ?? null,
      reservation.givesBackFor?.path ?? '',
      reservation.quota,
      reservation.bytes,
      reservation.expiresAt,
      reservation.total,
    ],
  );
  return row ? row.bytes : null;
}

/**
 * Names the upload's blob, reserving no room if none was, under the blob's advisory lock taken
 * in the same statement (storage/files/blob-references.ts): the collector and the discard of let-go
 * bytes decide under that lock, so they either see the name or are done before it is written.
 */
export async function nameReservedBlob(
  tx: Queryable,
  reservation: Reservation,
  sha256: string,
): Promise<void> {
  await tx.query(
    `insert into upload_reservations (reservation_id, agent_id, bytes, expires_at, sha256)
     select $1, $2, $3, $4, $5
     from (select pg_advisory_xact_lock(${ADVISORY_LOCK_CLASS.blobs}, hashtext($5))) blob_lock
     on conflict (reservation_id) do update set sha256 = excluded.sha256`,
    [
      reservation.reservationId,
      reservation.agentId,
      reservation.bytes,
      reservation.expiresAt,
      sha256,
    ],
  );
}

/** Drops a reservation; answers the blob it named, or null (none, or the row was gone). */
export async function dropReservation(
  db: Queryable,
  reservationId: string,
): Promise<string | null> {
  const [row] = await db.query<{ sha256: string | null }>(
    'delete from upload_reservations where reservation_id = $1 returning sha256',
    [reservationId],
  );
  return row?.sha256 ?? null;
}

/** Drops reservations past their time (left by a process that stopped); answers how many. */
export async function dropExpiredReservations(tx: Queryable, now: Date): Promise<number> {
  const rows = await tx.query(
    'delete from upload_reservations where expires_at <= $1 returning 1',
    [now],
  );
  return rows.length;
}
