import { ServiceError } from '../../protocol/errors.ts';
import {
  findTokenByHash,
  findTokenById,
  touchToken,
  type TokenRow,
} from '../../storage/kernel/tokens.ts';
import type { Queryable } from '../../storage/driver.ts';
import type { Clock } from './clock.ts';
import { SharedReads } from './shared-reads.ts';
import { withToken, type Principal } from './principal.ts';
import { grantOf, type TokenGrant } from './token-scope.ts';
import { sameHash, tokenKey, tokenShape, TOKEN_PREFIX } from './tokens.ts';

const CACHE_LIMIT = 50_000;
/** The longest a timer of the event loop waits (about 24.8 days); longer waits are chained. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;
/** A token's `last_used_at` is written at most this often. */
const TOUCH_EVERY_MS = 60_000;

/** One token as the cache keeps it: its grant, and when its use was last noted. */
interface Cached {
  readonly grant: TokenGrant;
  touchedAtMs: number;
}

/** The principal made for a grant, and the agent's own principal it was made from. */
interface MadePrincipal {
  readonly base: Principal;
  readonly principal: Principal;
}

/** Why a known token no longer works, in words for the 401. */
function refusal(row: TokenRow & { agentSuspended: boolean }, nowMs: number): string | null {
  if (row.agentSuspended) {
    return 'This agent is suspended by the operator: its tokens do not work. Its changes feed said why; write to the operator (leave_feedback, no token needed) to ask.';
  }
  if (row.revokedAt !== null) {
    const why =
      row.revokedReason === 'leaked'
        ? 'because it was found in a public place (your changes feed has a `token.revoked` change saying where)'
        : row.revokedReason === 'rotated'
          ? 'by rotate_token'
          : row.revokedReason === 'operator'
            ? 'by the operator'
            : row.revokedReason === 'replaced'
              ? 'because OPERATOR_TOKEN was set to another token'
              : 'by revoke_token';
    return `That API token was revoked at ${row.revokedAt.toISOString()} ${why}. Use another of your tokens.`;
  }
  if (row.expiresAt !== null && row.expiresAt.getTime() <= nowMs) {
    return `That API token expired at ${row.expiresAt.toISOString()}. Use another of your tokens (create_token makes one).`;
  }
  return null;
}

function unknownToken(): ServiceError {
  return new ServiceError(
    'unauthorized',
    'That API token is not known: sign up again if it was lost.',
    { reason: 'unknown' },
  );
}

/**
 * Token -> its grant (whose it is, what it may do). Looks up the SHA-256 of the token (the token
 * is never stored) and keeps a bounded cache of live tokens seen, so the hot path asks the
 * database once per token. A token that expires is refused from its expiry on by the clock;
 * one revoked (here or in another process: services.listenToOtherProcesses) is forgotten.
 */
export class TokenResolver {
  private readonly cache = new Map<string, Cached>();
  /** Reads of a token by its key: callers at once share one (./shared-reads.ts). */
  private readonly reads = new SharedReads<Cached>();
  private readonly listeners = new Set<(agentId: string) => void>();
  private readonly allListeners = new Set<() => void>();

  constructor(
    /** Where to read: the request's open transaction, or the driver. */
    private readonly db: () => Queryable,
    /** Where a use is noted, outside any request's transaction. */
    private readonly writer: () => Queryable,
    private readonly clock: Clock,
  ) {}

  /**
   * The grant of a token, or a 401 `unauthorized` that says what is wrong (thrown at once
   * when it is missing or malformed). A token seen before is answered at once, not as a
   * promise: the hot path of every request waits for nothing here.
   */
  resolve(token: string | undefined): TokenGrant | Promise<TokenGrant> {
    if (token === undefined || token === '') {
      throw new ServiceError(
        'unauthorized',
        'Send your API token as `Authorization: Bearer <api_token>`.',
      );
    }
    const key = tokenKey(token);
    const cached = this.fresh(key);
    if (cached) return cached.grant;
    const shape = tokenShape(token);
    if (shape === 'wrong_prefix') {
      throw new ServiceError(
        'unauthorized',
        `That is not an API token of this service: they start with \`${TOKEN_PREFIX}\`.`,
        { reason: 'malformed' },
      );
    }
    if (shape === 'malformed') {
      throw new ServiceError(
        'unauthorized',
        'That API token is malformed: check that it was copied whole.',
        { reason: 'malformed' },
      );
    }
    return this.lookUp(key).then((entry) => entry.grant);
  }

  /**
   * The principal of a call made with `grant` by the agent whose own principal is `base`:
   * made once per token while it stays cached.
   */
  principalFor(grant: TokenGrant, base: Principal): Principal {
    const made = this.principals.get(grant);
    // A reloaded agent has a new principal of its own: the one made from the old is remade.
    if (made?.base === base) return made.principal;
    const principal = withToken(base, grant);
    this.principals.set(grant, { base, principal });
    return principal;
  }

  private readonly principals = new WeakMap<TokenGrant, MadePrincipal>();

  /** Checks again, from the database, that a token is still good (an open socket's). */
  async recheck(grant: TokenGrant): Promise<TokenGrant> {
    const key = this.keyOf(grant);
    if (!key) {
      throw new ServiceError('unauthorized', 'That API token is no longer known.', {
        reason: 'unknown',
      });
    }
    this.cache.delete(key);
    return (await this.lookUp(key)).grant;
  }

  /** Forgets every cached token of the agent (its tokens changed, maybe in another process). */
  forgetAgent(agentId: string): void {
    this.reads.invalidate();
    for (const [key, cached] of this.cache)
      if (cached.grant.agentId === agentId) this.cache.delete(key);
    for (const listener of this.listeners) listener(agentId);
  }

  /**
   * Forgets every cached token (word of changes from other processes may have been lost), and
   * tells the listeners of each agent whose tokens were cached, so open sockets are re-checked.
   */
  forgetAll(): void {
    this.reads.invalidate();
    const agents = new Set([...this.cache.values()].map((cached) => cached.grant.agentId));
    for (const agentId of agents) this.forgetAgent(agentId);
    for (const listener of this.allListeners) listener();
  }

  /**
   * Calls `ended` once, with the 401 a new call would get, when the token of `grant` stops
   * working: revoked, rotated out, expired (at its expiry, by the service's clock), or its agent
   * suspended; here or in another process. Every door that holds a caller beyond one answer (a
   * socket, a parked long-poll) watches its token so; `stop()` on the answer stops watching.
   * A failure to read the database is not the token's: the watch goes on. A watch is one small
   * object (no closure of its own): 10,000 idle sockets hold 10,000 of them.
   */
  watch(grant: TokenGrant, ended: (why: ServiceError) => void): TokenWatch {
    return this.watchesOf().add(grant, ended);
  }

  /**
   * Tells `observer` of every watch's start and end (its end comes once, whether stopped or
   * ended by the token): what keeps an agent present while a connection is held open, without
   * this resolver knowing of presence.
   */
  observeWatches(observer: WatchObserver): void {
    this.watchesOf().observers.push(observer);
  }

  private watchesOf(): TokenWatches {
    return (this.watches ??= new TokenWatches(this, this.clock));
  }

  private watches: TokenWatches | undefined;

  /** The grant kept now for the token of `grant` (maybe a newer one), if it is kept. */
  current(grant: TokenGrant): TokenGrant | undefined {
    const key = this.keyOf(grant);
    return key === undefined ? undefined : this.fresh(key)?.grant;
  }

  /** Whether `grant` is still the one cached for its token (nothing was forgotten since). */
  isCurrent(grant: TokenGrant): boolean {
    const key = this.keyOf(grant);
    return key !== undefined && this.fresh(key)?.grant === grant;
  }

  /** Calls `listener` when every agent's tokens may have changed (see `forgetAll`). */
  onAllForgotten(listener: () => void): () => void {
    this.allListeners.add(listener);
    return () => this.allListeners.delete(listener);
  }

  /** Calls `listener` whenever an agent's tokens change (a door holding connections re-checks). */
  onAgentTokensChanged(listener: (agentId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The cached entry for `key`, unless its token has expired since (then it is forgotten). */
  private fresh(key: string): Cached | undefined {
    const cached = this.cache.get(key);
    if (!cached) return undefined;
    const nowMs = this.clock.now();
    const { expiresAtMs } = cached.grant;
    if (expiresAtMs !== null && expiresAtMs <= nowMs) {
      this.cache.delete(key);
      return undefined;
    }
    if (nowMs - cached.touchedAtMs >= TOUCH_EVERY_MS) this.touch(cached, nowMs);
    return cached;
  }

  private keyOf(grant: TokenGrant): string | undefined {
    return this.keys.get(grant.tokenId);
  }

  /** Token id -> cache key, for tokens whose grant was handed out (sockets re-check by it). */
  private readonly keys = new Map<string, string>();

  /**
   * The token's entry, read from the database: one read for every caller at once, unless the
   * caller is inside a request's transaction (on PGlite, which holds the one connection, it
   * must read through it, and a read of its own costs no one else a wait).
   */
  private lookUp(key: string): Promise<Cached> {
    const db = this.db();
    if (db !== this.writer()) return this.read(db, key, this.reads.now);
    return this.reads.share(key, (generation) => this.read(db, key, generation));
  }

  private async read(db: Queryable, key: string, generation: number): Promise<Cached> {
    const hash = Buffer.from(key, 'base64');
    const found = await findTokenByHash(db, hash);
    if (!found || !sameHash(found.tokenHash, hash)) throw unknownToken();
    return this.admit(found, key, generation);
  }

  /**
   * The grant of a token known by its id, not its secret (a storage link names the token that
   * made it: actors/files/storage-links.ts), or the 401 a call with that token would get now.
   */
  async grantById(tokenId: string): Promise<TokenGrant> {
    const key = this.keys.get(tokenId);
    const cached = key === undefined ? undefined : this.fresh(key);
    if (cached) return cached.grant;
    const generation = this.reads.now;
    const found = await findTokenById(this.db(), tokenId);
    if (!found) throw unknownToken();
    return this.admit(found, Buffer.from(found.tokenHash).toString('base64'), generation).grant;
  }

  /**
   * A token found in the database: refused when it no longer works, else cached, unless tokens
   * were forgotten since the read began (`generation`): then it is only handed to its callers.
   */
  private admit(
    found: TokenRow & { agentSuspended: boolean },
    key: string,
    generation: number,
  ): Cached {
    const nowMs = this.clock.now();
    const why = refusal(found, nowMs);
    if (why !== null) {
      const reason = found.agentSuspended
        ? 'suspended'
        : found.revokedAt !== null
          ? 'revoked'
          : 'expired';
      throw new ServiceError('unauthorized', why, { reason });
    }
    // Its id names its key, for the re-checks of the sockets it is handed to, kept or not.
    if (this.keys.size >= CACHE_LIMIT) this.keys.delete(this.keys.keys().next().value as string);
    this.keys.set(found.tokenId, key);
    if (!this.reads.kept(generation)) return { grant: grantOf(found), touchedAtMs: nowMs };
    if (this.cache.size >= CACHE_LIMIT) {
      const oldest = this.cache.keys().next().value as string;
      const gone = this.cache.get(oldest);
      this.cache.delete(oldest);
      if (gone) this.keys.delete(gone.grant.tokenId);
    }
    const entry: Cached = { grant: grantOf(found), touchedAtMs: 0 };
    this.cache.set(key, entry);
    this.touch(entry, nowMs);
    return entry;
  }

  /** Notes the use in the background: a failure costs only the note. */
  private touch(entry: Cached, nowMs: number): void {
    entry.touchedAtMs = nowMs;
    touchToken(this.writer(), entry.grant.tokenId, new Date(nowMs)).catch(() => undefined);
  }
}

/** A watch on a token (TokenResolver.watch): `stop()` ends it; calling it again does nothing. */
export interface TokenWatch {
  stop(): void;
}

/** What hears of every token watch held in this process (TokenResolver.observeWatches). */
export interface WatchObserver {
  /** A connection of the agent's is held open from now... */
  held(agentId: string): void;
  /** ...until now: called once for each `held`. */
  released(agentId: string): void;
}

/** One holder of a token: its grant (the newest, after a re-check) and what to call at its end. */
class Watched implements TokenWatch {
  cancelExpiry: (() => void) | null = null;
  done = false;

  constructor(
    private readonly watches: TokenWatches,
    public grant: TokenGrant,
    readonly ended: (why: ServiceError) => void,
  ) {}

  stop(): void {
    this.watches.remove(this);
  }
}

/**
 * The watches of TokenResolver.watch: when an agent's tokens change (a revoke, a rotation, a
 * suspension; or word from other processes was lost: every agent), each distinct token watched
 * is checked again in the database, once however many hold it; a token that expires is checked
 * at its expiry.
 */
class TokenWatches {
  private readonly byAgent = new Map<string, Set<Watched>>();

  constructor(
    private readonly tokens: TokenResolver,
    private readonly clock: Clock,
  ) {
    tokens.onAgentTokensChanged((agentId) => this.recheckAgent(agentId));
    tokens.onAllForgotten(() => {
      for (const agentId of [...this.byAgent.keys()]) this.recheckAgent(agentId);
    });
  }

  readonly observers: WatchObserver[] = [];

  add(grant: TokenGrant, ended: (why: ServiceError) => void): TokenWatch {
    const watched = new Watched(this, grant, ended);
    watched.cancelExpiry = this.expiryTimer(watched);
    let set = this.byAgent.get(grant.agentId);
    if (!set) this.byAgent.set(grant.agentId, (set = new Set()));
    set.add(watched);
    for (const observer of this.observers) observer.held(grant.agentId);
    // The grant is no longer the one kept: a change forgot it since the caller's resolve
    // (look again), or another read of the same token replaced it (take that one: it was
    // read after any change that forgot the old, so it is as good as a read now).
    if (!this.tokens.isCurrent(grant)) {
      const kept = this.tokens.current(grant);
      if (kept) this.follow(watched, kept);
      else this.recheck([watched]);
    }
    return watched;
  }

  remove(watched: Watched): void {
    if (watched.done) return;
    watched.done = true;
    watched.cancelExpiry?.();
    const { agentId } = watched.grant;
    const set = this.byAgent.get(agentId);
    set?.delete(watched);
    if (set?.size === 0) this.byAgent.delete(agentId);
    for (const observer of this.observers) observer.released(agentId);
  }

  private recheckAgent(agentId: string): void {
    const watched = this.byAgent.get(agentId);
    if (!watched) return;
    const byToken = new Map<string, Watched[]>();
    for (const one of watched) {
      const same = byToken.get(one.grant.tokenId);
      if (same) same.push(one);
      else byToken.set(one.grant.tokenId, [one]);
    }
    for (const holders of byToken.values()) this.recheck(holders);
  }

  /** Re-checks the grant these holders share: keeps them, or ends each. */
  private recheck(holders: Watched[]): void {
    const grant = (holders[0] as Watched).grant;
    this.tokens.recheck(grant).then(
      (fresh) => {
        for (const watched of holders) if (!watched.done) this.follow(watched, fresh);
      },
      (error: unknown) => {
        if (!(error instanceof ServiceError && error.code === 'unauthorized')) return;
        for (const watched of holders) {
          if (watched.done) continue;
          this.remove(watched);
          watched.ended(error);
        }
      },
    );
  }

  /**
   * The holder takes the newer grant of its token. A rotation with a grace shortens the old
   * token's life: its timer follows.
   */
  private follow(watched: Watched, fresh: TokenGrant): void {
    const before = watched.grant;
    watched.grant = fresh;
    if (fresh.expiresAtMs !== before.expiresAtMs) {
      watched.cancelExpiry?.();
      watched.cancelExpiry = this.expiryTimer(watched);
    }
  }

  /** The expiry's timer, cancelled by the answer; null for a token that does not expire. */
  private expiryTimer(watched: Watched): (() => void) | null {
    const { expiresAtMs } = watched.grant;
    if (expiresAtMs === null) return null;
    const waitMs = expiresAtMs - this.clock.now();
    if (waitMs > LONGEST_TIMER_MS) {
      let cancel: (() => void) | null = this.clock.setTimeout(() => {
        cancel = this.expiryTimer(watched);
      }, LONGEST_TIMER_MS);
      return () => cancel?.();
    }
    return this.clock.setTimeout(() => this.recheck([watched]), Math.max(0, waitMs));
  }
}
