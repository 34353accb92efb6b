/**
 * Room reserved by uploads in progress (migrations/014_every_kept_byte.sql), and what counts
 * against an agent's quota: its kept versions, its staged blocks and its reservations.
 */
import type { Queryable } from './driver.ts';

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

/** Takes or changes a reservation's room. */
export async function reserve(tx: Queryable, reservation: Reservation): Promise<void> {
  await tx.query(
    `insert into upload_reservations (reservation_id, agent_id, bytes, expires_at)
     values ($1, $2, $3, $4)
     on conflict (reservation_id) do update set bytes = excluded.bytes,
       expires_at = excluded.expires_at`,
    [reservation.reservationId, reservation.agentId, reservation.bytes, reservation.expiresAt],
  );
}

/** Names the upload's blob (the caller holds the blob's lock), reserving no room if none was. */
export async function nameReservedBlob(
  tx: Queryable,
  reservation: Reservation,
  sha256: string,
): Promise<void> {
  await tx.query(
    `insert into upload_reservations (reservation_id, agent_id, bytes, expires_at, sha256)
     values ($1, $2, $3, $4, $5)
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

export async function dropReservation(db: Queryable, reservationId: string): Promise<void> {
  await db.query('delete from upload_reservations where reservation_id = $1', [reservationId]);
}

/** Drops reservations past their time (left by a process that stopped); answers how many. */
export async function dropExpiredReservations(tx: Queryable, now: Date): Promise<number> {
  const rows = await tx.query(
    'delete from upload_reservations where expires_at <= $1 returning 1',
    [now],
  );
  return rows.length;
}
