/**
 * The advisory locks the service takes, named in one place so that no two uses share a number
 * by accident. All are transaction-scoped (`pg_advisory_xact_lock`): they end with the
 * transaction, commit or rollback, so none is ever left held. PostgreSQL keeps the one-bigint
 * form and the two-int form apart: a whole lock never meets a class's per-key lock.
 */

/**
 * Whole locks, one bigint each (`pg_advisory_xact_lock(n)`): every process on the database
 * takes turns on the one thing.
 */
export const ADVISORY_LOCK = {
  /** Applying migrations (storage/migrate.ts): processes starting at once apply each once. */
  migrations: 7723001,
  /** Writing signing_keys (storage/receipts/signing-keys.ts): one current key, whoever starts or rotates. */
  signingKeys: 7723002,
  /** The index's reader role and its login (actors/index/setup.ts): grants collide otherwise. */
  indexSetup: 7723004,
  /** Making the operator's help workspace (storage/agents/agents.ts): one, not one each. */
  helpWorkspace: 7723007,
  /** Registering conventions (storage/conventions/conventions.ts): the cap and near-duplicates hold. */
  conventionRegistrations: 7723017,
} as const;

/**
 * Classes of per-key locks, two ints each (`pg_advisory_xact_lock(class, hashtext(key))`): two
 * keys whose hashtext collides share a lock, so they only take turns.
 */
export const ADVISORY_LOCK_CLASS = {
  /** One blob, by sha256 (storage/files/blob-references.ts): the collector and a save take turns. */
  blobs: 7723003,
  /** One agent's listing watches (storage/store/listings.ts): the per-agent cap holds exactly. */
  listingWatches: 7723005,
  /** One knocker's knocks (storage/chat.ts): the hourly limit holds exactly. */
  knocks: 7723006,
  /** One agent's email invites (storage/workspaces/invites.ts): the hourly limit holds across workspaces. */
  emailInvites: 7723018,
} as const;
