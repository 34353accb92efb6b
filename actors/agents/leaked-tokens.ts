import type { Transaction } from '../../storage/driver.ts';
import type { ChangeDraft } from '../../storage/kernel/changes.ts';
import {
  findLiveTokensByHashes,
  revokeToken,
  type FoundWhere,
} from '../../storage/kernel/tokens.ts';
import type { SaveHook } from '../files/save-hooks.ts';
import type { Services } from '../kernel/services.ts';
import { hashToken, tokenShape, TOKEN_PREFIX } from '../kernel/tokens.ts';

/** The hashes among these that are live tokens now (one indexed query). */
type LookUp = (hashes: Uint8Array[]) => Promise<readonly Uint8Array[]>;

/**
 * Leaked tokens: every save others can read (a file in a public workspace, a listing, a
 * message, feedback) is scanned for the service's own API tokens; a live one found there is
 * revoked in the save's own transaction, so it is dead before the save answers, and its owner
 * gets a `token.revoked` change saying where. The save itself goes on with the text as written.
 *
 * A token is `asvc_` and 46 base62 characters whose checksum holds (./kernel/tokens.ts
 * tokenShape), with no base62 character right before or after it: a look-alike, or the middle
 * of a longer word, is no alarm. Tokens are ASCII, so bytes of any file are scanned as they are.
 *
 * Work is bounded per byte, never by a count a file could use up: the prefix is found by
 * Buffer's native search, the token's form by one linear regular expression, and only a whole
 * token (at least 52 bytes apart from the next) costs a checksum. Every well-formed token is
 * checked, however many decoys come before it: a scan bound to the service looks them up as
 * they come, LOOKUP_BATCH at a time, each batch one indexed query (`token_hash = any(...)`), and
 * keeps only the live ones, so what it holds is bounded too (a batch, and the live tokens).
 */

/** Well-formed tokens looked up together (one indexed query each), as a stream goes by. */
export const LOOKUP_BATCH = 1_000;

const PREFIX = Buffer.from(TOKEN_PREFIX, 'latin1');
/** `asvc_` and its 46 characters. */
const TOKEN_CHARS = TOKEN_PREFIX.length + 46;
/** Bytes kept from one chunk to the next: a token that may run on, and the byte before it. */
const CARRY = TOKEN_CHARS + 1;
/** Look-alikes remembered as checked, so a file of one repeated look-alike hashes it once. */
const CHECKED_LIMIT = 1_024;

/** A token's form, its checksum and its neighbours aside. */
const TOKEN_FORM = new RegExp(`${TOKEN_PREFIX}[0-9A-Za-z]{46}`);

const BASE62 = new Uint8Array(256);
for (const c of '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz')
  BASE62[c.charCodeAt(0)] = 1;

/** The SHA-256 of each token found (never the token itself), distinct, in the order found. */
export type FoundTokens = readonly Uint8Array[];

/**
 * Finds tokens in bytes as they stream by, chunk after chunk, holding no more than the last
 * CARRY bytes of one chunk beside the next: a token split across chunks (even across many
 * tiny ones) is found once, whole. Call `see` for each chunk, then `found` once at the end.
 */
export class TokenScan {
  /** Well-formed tokens found and not looked up yet: at most LOOKUP_BATCH when bound. */
  private readonly tokens = new Set<string>();
  /** Live tokens found by the lookups so far, by their hash (latin1). */
  private readonly live = new Map<string, Uint8Array>();
  /** Look-alikes whose checksum failed, remembered up to CHECKED_LIMIT. */
  private readonly lookAlikes = new Set<string>();
  /** The last CARRY bytes of the stream so far (a copy: the chunk itself is not kept). */
  private tail = Buffer.alloc(0);
  /** Bytes of the stream so far. */
  private total = 0;
  /** Stream position of the first token start not yet decided (every earlier one was). */
  private next = 0;

  /**
   * `services`: look the tokens up as they come (a stream of any size); without, every
   * well-formed token is kept to the end (a text whose size its operation bounds).
   */
  constructor(services?: Services) {
    this.lookUp = services
      ? async (hashes) => {
          const rows = await findLiveTokensByHashes(
            services.db(),
            hashes,
            new Date(services.clock.now()),
          );
          return rows.map((row) => row.tokenHash);
        }
      : undefined;
  }

  private readonly lookUp: LookUp | undefined;

  /**
   * Scans one chunk. When a batch of tokens is full the answer is a promise: await it before the
   * next chunk (it looks the batch up, so that no more than one batch is ever held).
   */
  see(chunk: Uint8Array): void | Promise<void> {
    this.scan(chunk);
    if (this.lookUp && this.tokens.size >= LOOKUP_BATCH) return this.lookUpBatch(this.lookUp);
  }

  private async lookUpBatch(lookUp: LookUp): Promise<void> {
    const hashes = [...this.tokens].map(hashToken);
    this.tokens.clear();
    for (const hash of await lookUp(hashes)) {
      this.live.set(Buffer.from(hash).toString('latin1'), hash);
    }
  }

  private scan(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const before = this.total;
    this.total += bytes.length;
    // The seam: starts in the carried tail, and at the chunk's first byte (its left neighbour
    // is in the tail), read across into the chunk's head.
    const seam = Buffer.concat([this.tail, bytes.subarray(0, CARRY)]);
    this.next = this.decide(seam, before - this.tail.length, this.next, before + 1, false);
    // The rest of the chunk, in place; starts that run past its end wait for the next chunk.
    if (this.next === before + 1)
      this.next = this.decide(bytes, before, this.next, this.total, false);
    this.tail = Buffer.from(
      bytes.length >= CARRY
        ? bytes.subarray(bytes.length - CARRY)
        : Buffer.concat([this.tail, bytes]).subarray(-CARRY),
    );
  }

  /**
   * The tokens found, the stream's end being the end of the last one's word: those not looked
   * up yet, and those the lookups found live (the save's transaction checks them again).
   */
  found(): FoundTokens {
    this.decide(this.tail, this.total - this.tail.length, this.next, this.total, true);
    this.next = this.total;
    const pending = [...this.tokens].map(hashToken);
    const seen = new Set(pending.map((hash) => Buffer.from(hash).toString('latin1')));
    return [
      ...pending,
      ...[...this.live].filter(([key]) => !seen.has(key)).map(([, hash]) => hash),
    ];
  }

  /**
   * Decides every start of a token at stream positions [from, to) whose bytes `buf` holds
   * (`buf` is the stream from position `offset`); answers where undecided starts begin.
   */
  private decide(buf: Buffer, offset: number, from: number, to: number, atEnd: boolean): number {
    // A start is decided once the byte after its token is in `buf` (or the stream ended).
    const decidable = Math.min(to, offset + buf.length - TOKEN_CHARS + (atEnd ? 1 : 0));
    if (decidable <= from) return from;
    const stop = decidable - offset;
    // Most bytes hold no `asvc_` at all: Buffer's native search says so without a copy.
    const first = buf.indexOf(PREFIX, from - offset);
    if (first === -1 || first >= stop) return decidable;
    // Else one pass of a regular expression finds the words of a token's form (far fewer
    // calls than one search per occurrence, in a file made of `asvc_`); a match consumes its
    // 51 characters, none of which can begin a token with a free left side.
    const text = buf.toString('latin1', first, Math.min(buf.length, stop + TOKEN_CHARS));
    const words = new RegExp(TOKEN_FORM.source, 'g');
    for (let match = words.exec(text); match !== null; match = words.exec(text)) {
      const start = first + match.index;
      if (start >= stop) break;
      this.consider(buf, start, offset);
    }
    return decidable;
  }

  private consider(buf: Buffer, start: number, offset: number): void {
    const leftFree = start === 0 ? offset === 0 : BASE62[buf[start - 1] as number] === 0;
    if (!leftFree) return;
    const end = start + TOKEN_CHARS;
    if (end < buf.length && BASE62[buf[end] as number] === 1) return;
    const token = buf.toString('latin1', start, end);
    if (this.tokens.has(token) || this.lookAlikes.has(token)) return;
    if (tokenShape(token) === 'ok') this.tokens.add(token);
    else if (this.lookAlikes.size < CHECKED_LIMIT) this.lookAlikes.add(token);
  }
}

/** The tokens in a text (a message, feedback), as its UTF-8 bytes hold them. */
export function tokensInText(text: string): FoundTokens {
  const scan = new TokenScan();
  scan.see(Buffer.from(text, 'utf8'));
  return scan.found();
}

/** What revoking leaked tokens adds to the save's commit. */
export interface LeakRevocations {
  /** One `token.revoked` per token revoked, to its owner. */
  changes: ChangeDraft[];
  /** Forgets the owners' cached tokens here (other processes heard by notice in the commit). */
  afterCommit: () => void;
}

const NOTHING: LeakRevocations = { changes: [], afterCommit: () => undefined };

/**
 * Revokes, in the save's transaction `tx`, every live token among `found`, as found at `where`
 * (asked only when one is live): the token stops with reason `leaked`, its owner's feed gets
 * `token.revoked`, other processes are told in the commit, and this one after it
 * (`afterCommit`). Revoked, expired and unknown tokens change nothing.
 */
export async function revokeLeakedTokens(
  tx: Transaction,
  services: Services,
  found: FoundTokens,
  where: () => FoundWhere | Promise<FoundWhere>,
): Promise<LeakRevocations> {
  if (found.length === 0) return NOTHING;
  const now = new Date(services.clock.now());
  const live = await findLiveTokensByHashes(tx, found, now);
  if (live.length === 0) return NOTHING;
  const foundIn = await where();
  const changes: ChangeDraft[] = [];
  const owners = new Set<string>();
  // In token order, so two saves revoking the same tokens lock their rows in the same order.
  for (const row of live.sort((a, b) => (a.tokenId < b.tokenId ? -1 : 1))) {
    const revoked = await revokeToken(tx, row.agentId, row.tokenId, now, 'leaked', foundIn);
    if (!revoked) continue;
    owners.add(row.agentId);
    changes.push({
      agentId: row.agentId,
      type: 'token.revoked',
      data: { token_id: row.tokenId, name: row.name, reason: 'leaked', found_in: foundIn },
    });
  }
  for (const agentId of owners) await services.noticeTokenChange(tx, agentId);
  return {
    changes,
    afterCommit: () => {
      for (const agentId of owners) services.forgetCredentials(agentId);
    },
  };
}

/**
 * Every file save, by any door: its bytes are scanned as they stream to the blob store, and in
 * the save's transaction, when the workspace is public (anyone may read it), the live tokens
 * they held are revoked. It runs after the other save hooks, so a token in a listing's file
 * (the store's hook names the listing it recorded) is reported as the listing's.
 */
export const leakedTokensSaveHook: SaveHook<FoundTokens> = {
  watch({ services }) {
    const scan = new TokenScan(services);
    return { see: (chunk) => scan.see(chunk), finish: () => scan.found() };
  },
  afterOthers: true,
  async saved(tx, services, saved) {
    if (saved.visibility !== 'public') return {};
    const { workspaceId, path, listed } = saved;
    return revokeLeakedTokens(tx, services, saved.seen.of(leakedTokensSaveHook) ?? [], () =>
      listed
        ? { kind: 'listing', listing_id: listed.listingId, workspace_id: workspaceId }
        : { kind: 'file', workspace_id: workspaceId, path },
    );
  },
};
