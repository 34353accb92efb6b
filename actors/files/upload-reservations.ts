/**
 * Room in the quota held for an upload while its bytes stream in (rule `every_kept_byte`,
 * /protocol "Files"). Before a byte is streamed the upload reserves its declared length, or,
 * for a body of unknown length, room that grows ahead of the bytes as they arrive; the
 * reservation is a row beside the agent's usage (storage/upload-reservations.ts), taken under
 * the agent's usage-row lock, so uploads at once, in any process on one database, never hold
 * more than the quota between them. A body that outgrows the room left is refused at that
 * chunk (its temporary file goes with it).
 *
 * Once the bytes are hashed, and before they are visible in the blob store, the reservation
 * names its blob under the blob's lock: nothing deletes a blob an upload is about to commit.
 * The save's commit gives the reservation back in its own transaction (`releaseIn`), so the
 * bytes move from reserved to kept at once; a refused upload gives it back and deletes its
 * bytes at once (`settle`). A reservation left by a process that stopped lapses after an hour.
 */
import { randomUUID } from 'node:crypto';
import type { Transaction } from '../../storage/driver.ts';
import { lockBlob } from '../../storage/blob-references.ts';
import {
  dropReservation,
  lockStorageUse,
  nameReservedBlob,
  readHeldBytes,
  reserve,
} from '../../storage/upload-reservations.ts';
import { discardUnusedBlobs } from './blob-collector.ts';
import { currentUnit } from '../kernel/commit.ts';
import type { Services } from '../kernel/services.ts';
import { quotaExceeded } from './quota.ts';

/** After this long a reservation no longer counts (its process is taken to have stopped). */
export const RESERVATION_LIFETIME_MS = 60 * 60 * 1000;

/** A body of unknown length reserves up to this much past what it has sent (fewer round trips). */
const GROW_AHEAD_MAX_BYTES = 8 * 1024 * 1024;
const GROW_AHEAD_MIN_BYTES = 256 * 1024;

export interface ReservationOptions {
  /** The most this upload may take, whatever the room (its size cap). */
  cap: number;
  /** Bytes the upload gives back if saved (the caller's own file it replaces and lets go). */
  givesBack?: number;
  /** A staged block the upload replaces: its bytes do not count against the room. */
  replacesBlock?: { workspaceId: string; path: string; blockId: string };
}

export class UploadReservation {
  readonly id = randomUUID();
  private bytes = 0;
  private sha256: string | null = null;

  constructor(
    private readonly services: Services,
    private readonly agentId: string,
    private readonly options: ReservationOptions,
  ) {}

  /**
   * Makes sure the upload holds room for `total` bytes in all, reserving `ahead` more when the
   * room allows; refuses with `quota_exceeded` when `total` does not fit.
   */
  async cover(total: number, ahead = 0): Promise<void> {
    if (total <= this.bytes) return;
    const wanted = Math.max(total, Math.min(total + ahead, this.options.cap));
    await this.transaction(async (tx) => {
      await lockStorageUse(tx, this.agentId);
      const now = new Date(this.services.clock.now());
      const held = await readHeldBytes(tx, {
        agentId: this.agentId,
        now,
        exceptReservation: this.id,
        exceptBlock: this.options.replacesBlock,
      });
      const room =
        this.services.storageQuotaBytes -
        held.kept -
        held.staged -
        held.reserved +
        (this.options.givesBack ?? 0);
      if (room < total) throw quotaExceeded(this.services);
      const bytes = Math.min(wanted, room);
      await reserve(tx, this.row(bytes, now));
      this.bytes = bytes;
    });
  }

  /** Reserves as the bytes of a body of unknown length arrive (`seen`: bytes so far). */
  grow(seen: number): Promise<void> {
    const ahead = Math.min(GROW_AHEAD_MAX_BYTES, Math.max(GROW_AHEAD_MIN_BYTES, seen));
    return this.cover(seen, ahead);
  }

  /** The blob store's `onHashed`: names the blob before it becomes visible. */
  readonly hashed = async (blob: { sha256: string }): Promise<void> => {
    await this.transaction(async (tx) => {
      await lockBlob(tx, blob.sha256);
      await nameReservedBlob(
        tx,
        this.row(this.bytes, new Date(this.services.clock.now())),
        blob.sha256,
      );
    });
    this.sha256 = blob.sha256;
  };

  /** Gives the room back inside the transaction that commits the upload's row. */
  async releaseIn(tx: Transaction): Promise<void> {
    await dropReservation(tx, this.id);
  }

  /**
   * Ends the reservation: a saved upload's row was committed with `releaseIn`; a refused one's
   * room is given back and its bytes deleted now, unless a row uses them. Inside a request's
   * unit of work (Idempotency-Key), whose transaction holds PGlite's one connection, this waits
   * for the unit to end: its rollback undoes the save, so the bytes go then too.
   */
  async settle(saved: boolean): Promise<void> {
    const unit = currentUnit();
    if (unit?.isOpen) {
      const cleanUp = () => this.cleanUp().catch(() => undefined);
      unit.onRollback(cleanUp);
      if (!saved) unit.onCommit(cleanUp);
      return;
    }
    if (!saved) await this.cleanUp();
  }

  /** The room given back and the bytes deleted if no row uses them; the collector is the net. */
  private async cleanUp(): Promise<void> {
    await dropReservation(this.services.driver, this.id);
    if (this.sha256) await discardUnusedBlobs(this.services, [this.sha256]);
  }

  private row(bytes: number, now: Date) {
    return {
      reservationId: this.id,
      agentId: this.agentId,
      bytes,
      expiresAt: new Date(now.getTime() + RESERVATION_LIFETIME_MS),
    };
  }

  /**
   * A transaction of its own, committed at once so other uploads see it; inside an open unit
   * of work (PGlite's one connection is its), a savepoint of the unit instead.
   */
  private transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    const unit = currentUnit();
    return unit?.isOpen ? unit.step(work) : this.services.driver.transaction(work);
  }
}
