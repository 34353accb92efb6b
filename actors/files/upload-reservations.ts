/**
 * Room in the quota held for an upload while its bytes stream in (rule `every_kept_byte`,
 * /protocol "Files"). Before a byte is streamed the upload reserves its declared length, or,
 * for a body of unknown length, room that grows ahead of the bytes as they arrive; the
 * reservation is a row beside the agent's usage (storage/files/upload-reservations.ts), taken under
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
import {
  dropReservation,
  lockStorageUse,
  nameReservedBlob,
  reserveWithinRoom,
} from '../../storage/files/upload-reservations.ts';
import { discardUnusedBlobs } from './blob-collector.ts';
import { currentUnit } from '../kernel/commit.ts';
import type { Services } from '../kernel/services.ts';
import { quotaExceeded, storageQuotaBytes } from './quota.ts';

/** After this long a reservation no longer counts (its process is taken to have stopped). */
const RESERVATION_LIFETIME_MS = 60 * 60 * 1000;

/** A body of unknown length reserves up to this much past what it has sent (fewer round trips). */
const GROW_AHEAD_MAX_BYTES = 8 * 1024 * 1024;
const GROW_AHEAD_MIN_BYTES = 256 * 1024;

export interface ReservationOptions {
  /** The most this upload may take, whatever the room (its size cap). */
  cap: number;
  /**
   * The path the upload saves to: the caller's own current version there, which the save lets
   * go (if the index did not read it), gives its bytes back, so it does not count against the
   * room (read in the reservation's own statement).
   */
  givesBackFor?: { workspaceId: string; path: string };
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
      // What the agent holds, the room, and the reservation, in one statement after the lock.
      const bytes = await reserveWithinRoom(tx, {
        ...this.row(wanted, now),
        now,
        quota: storageQuotaBytes(this.services),
        total,
        exceptBlock: this.options.replacesBlock,
        givesBackFor: this.options.givesBackFor,
        versionIsIndexedSql: this.services.versionIsIndexedSql,
      });
      if (bytes === null) throw quotaExceeded(this.services);
      this.bytes = bytes;
    });
    await this.countsChanged();
  }

  /** Reserves as the bytes of a body of unknown length arrive (`seen`: bytes so far). */
  grow(seen: number): Promise<void> {
    const ahead = Math.min(GROW_AHEAD_MAX_BYTES, Math.max(GROW_AHEAD_MIN_BYTES, seen));
    return this.cover(seen, ahead);
  }

  /** The blob store's `onHashed`: names the blob before it becomes visible. */
  readonly hashed = async (blob: { sha256: string }): Promise<void> => {
    const row = this.row(this.bytes, new Date(this.services.clock.now()));
    // One statement, under the blob's lock (taken in it): autocommitted, or a step of the unit.
    const unit = currentUnit();
    if (unit?.isOpen) await unit.step((tx) => nameReservedBlob(tx, row, blob.sha256));
    else await nameReservedBlob(this.services.driver, row, blob.sha256);
    this.sha256 = blob.sha256;
  };

  /**
   * Gives the room back inside the transaction that commits the upload's row. Answers whether
   * the reservation still named the upload's blob: then nothing can have deleted the blob since
   * it became visible (a name is a use the collector respects), and the commit need not look.
   */
  async releaseIn(tx: Transaction): Promise<boolean> {
    const named = await dropReservation(tx, this.id);
    return this.sha256 !== null && named === this.sha256;
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
    await this.services.countsChanged(this.agentId);
    if (this.sha256) await discardUnusedBlobs(this.services, [this.sha256]);
  }

  /**
   * The reserved bytes count in the agent's account figures (whoami): forgets them once the
   * reservation is visible to other readers, at once or when the request's unit commits.
   */
  private async countsChanged(): Promise<void> {
    const unit = currentUnit();
    if (unit?.isOpen) unit.onCommit(() => void this.services.countsChanged(this.agentId));
    else await this.services.countsChanged(this.agentId);
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
