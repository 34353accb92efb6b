import {
  ErrorCode,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { toProblem, type ServiceError } from '../../protocol/errors.ts';
import { asServiceError } from '../http/problem.ts';
import { RateLimited, type LimitHeaders } from '../http/rate-limit.ts';

/**
 * Counts one more request against the caller's limits: the RateLimit headers, or a promise of
 * them while credit shared with other processes is leased; throws (or rejects with) RateLimited
 * past them.
 */
export type CountMessage = () => LimitHeaders | Promise<LimitHeaders>;

/** What a message's count decides: undefined, admitted; null, a notification dropped; or its answer. */
export type Refusal = JSONRPCErrorResponse | null | undefined;

/**
 * The per-address limits, message by message: the first message of a POST rode on the HTTP
 * request's own count; every further one is counted here. A request past the limit is answered
 * alone with the `rate_limited` problem (as the HTTP refusal of a whole POST is), a notification
 * past it is dropped, and the HTTP answer carries the RateLimit headers and `Retry-After`.
 * Counting may wait for credit (several processes on PostgreSQL share the limits), so the
 * verdict may be a promise; the door delivers messages in order, each once its count is known.
 */
export class MessageLimits {
  private seen = 0;
  private latest: Record<string, string> | undefined;
  private retryAfter: string | undefined;

  constructor(
    private readonly count: CountMessage | undefined,
    private readonly baseUrl: string,
    private readonly log: (error: unknown) => void,
  ) {}

  refusal(message: JSONRPCMessage): Refusal | Promise<Refusal> {
    if (this.seen++ === 0 || !this.count) return undefined;
    let counted: LimitHeaders | Promise<LimitHeaders>;
    try {
      counted = this.count();
    } catch (error) {
      return this.refused(message, error);
    }
    if (!(counted instanceof Promise)) {
      this.latest = counted;
      return undefined;
    }
    return counted.then(
      (headers) => {
        this.latest = headers;
        return undefined;
      },
      (error: unknown) => this.refused(message, error),
    );
  }

  /** What the HTTP answer says of the limits once every message was counted. */
  headers(): Record<string, string> {
    if (!this.latest) return {};
    return {
      ...this.latest,
      ...(this.retryAfter === undefined ? {} : { 'retry-after': this.retryAfter }),
    };
  }

  /**
   * A message whose count failed: past the limit, or the count itself failed (the shared
   * limits' database unreachable), which refuses that message alone with its problem.
   */
  private refused(message: JSONRPCMessage, error: unknown): Refusal {
    let problem: ServiceError;
    if (error instanceof RateLimited) {
      this.latest = error.headers;
      this.retryAfter = error.headers['retry-after'];
      problem = error;
    } else problem = asServiceError(error, this.log);
    if (!('method' in message) || !('id' in message)) return null;
    return {
      jsonrpc: '2.0',
      id: message.id,
      error: {
        code: error instanceof RateLimited ? ErrorCode.ConnectionClosed : ErrorCode.InternalError,
        message: problem.message,
        data: toProblem(problem, this.baseUrl),
      },
    };
  }
}
