import { ServiceError } from '../../protocol/errors.ts';
import { findAgentByTokenHash } from '../../storage/agents.ts';
import type { Queryable } from '../../storage/driver.ts';
import { sameHash, tokenKey, tokenShape, TOKEN_PREFIX } from './tokens.ts';

const CACHE_LIMIT = 50_000;

/**
 * Token -> agent id. Looks up the SHA-256 of the token (the token is never stored) and keeps
 * a bounded cache of hashes seen, so the hot path asks the database once per token.
 */
export class TokenResolver {
  private readonly cache = new Map<string, string>();

  /** `db` gives where to read: the request's open transaction, or the driver. */
  constructor(private readonly db: () => Queryable) {}

  /**
   * The agent id for a token, or a 401 `unauthorized` that says what is wrong (thrown at once
   * when it is missing or malformed). A token seen before is answered at once, not as a
   * promise: the hot path of every request waits for nothing here.
   */
  resolve(token: string | undefined): string | Promise<string> {
    if (token === undefined || token === '') {
      throw new ServiceError(
        'unauthorized',
        'Send your API token as `Authorization: Bearer <api_token>`.',
      );
    }
    // A token seen before costs one hash; the shape (and its checksum) is checked only once.
    const key = tokenKey(token);
    const cached = this.cache.get(key);
    if (cached) return cached;
    const shape = tokenShape(token);
    if (shape === 'wrong_prefix') {
      throw new ServiceError(
        'unauthorized',
        `That is not an API token of this service: they start with \`${TOKEN_PREFIX}\`.`,
      );
    }
    if (shape === 'malformed') {
      throw new ServiceError(
        'unauthorized',
        'That API token is malformed: check that it was copied whole.',
      );
    }
    return this.lookUp(key);
  }

  private async lookUp(key: string): Promise<string> {
    const hash = Buffer.from(key, 'base64');
    const found = await findAgentByTokenHash(this.db(), hash);
    if (!found || !sameHash(found.tokenHash, hash)) {
      throw new ServiceError(
        'unauthorized',
        'That API token is not known: sign up again if it was lost.',
      );
    }
    if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(key, found.agentId);
    return found.agentId;
  }

  /** Forgets every cached token of the agent (its tokens changed, maybe in another process). */
  forgetAgent(agentId: string): void {
    for (const [key, cached] of this.cache) if (cached === agentId) this.cache.delete(key);
  }
}
