import {
  ErrorCode,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { toProblem } from '../../protocol/errors.ts';
import { RateLimited } from '../http/rate-limit.ts';

/** Counts one more request against the caller's limits; throws RateLimited past them. */
export type CountMessage = () => Record<string, string>;

/**
 * The per-address limits, message by message: the first message of a POST rode on the HTTP
 * request's own count; every further one is counted here. A request past the limit is answered
 * alone with the `rate_limited` problem (as the HTTP refusal of a whole POST is), a notification
 * past it is dropped, and the HTTP answer carries the RateLimit headers and `Retry-After`.
 */
export class MessageLimits {
  private seen = 0;
  private latest: Record<string, string> | undefined;
  private retryAfter: string | undefined;

  constructor(
    private readonly count: CountMessage | undefined,
    private readonly baseUrl: string,
  ) {}

  refusal(message: JSONRPCMessage): JSONRPCErrorResponse | null | undefined {
    if (this.seen++ === 0 || !this.count) return undefined;
    try {
      this.latest = this.count();
      return undefined;
    } catch (error) {
      if (!(error instanceof RateLimited)) throw error;
      this.latest = error.headers;
      this.retryAfter = error.headers['retry-after'];
      if (!('method' in message) || !('id' in message)) return null;
      return {
        jsonrpc: '2.0',
        id: message.id,
        error: {
          code: ErrorCode.ConnectionClosed,
          message: error.message,
          data: toProblem(error, this.baseUrl),
        },
      };
    }
  }

  /** What the HTTP answer says of the limits once every message was counted. */
  headers(): Record<string, string> {
    if (!this.latest) return {};
    return {
      ...this.latest,
      ...(this.retryAfter === undefined ? {} : { 'retry-after': this.retryAfter }),
    };
  }
}
