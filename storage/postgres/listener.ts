import postgres from 'postgres';
import { translatePostgresError } from './errors.ts';

/** Waits between attempts to listen again: 100 ms, doubling, at most 2 s. */
const retryDelay = (attempt: number) => Math.min(100 * 2 ** attempt, 2000);

/**
 * LISTEN on one connection of its own, which listens again by itself whenever that connection
 * is lost, retrying until the server answers. (postgres.js's `sql.listen` tries once after a
 * lost connection and, if the server is still down then, stops listening for good.)
 */
export class PostgresListener {
  private readonly handlers = new Map<string, ((payload: string) => void)[]>();
  private readonly resumed: (() => void)[] = [];
  private readonly sql: postgres.Sql;
  private resubscribing: Promise<void> | null = null;
  private closed = false;
  private wake: (() => void) | null = null;

  constructor(url: string, options: postgres.Options<Record<string, postgres.PostgresType>>) {
    // postgres.js calls `onnotify` for every NOTIFY on this connection (what its own listen
    // uses); its types leave the option out.
    const notifications = {
      onnotify: (channel: string, payload: string) => {
        for (const handler of this.handlers.get(channel) ?? []) {
          try {
            handler(payload);
          } catch (error) {
            // Not postgres.js's to handle: a throw in there would break its connection.
            queueMicrotask(() => {
              throw error;
            });
          }
        }
      },
    };
    this.sql = postgres(url, {
      ...options,
      ...notifications,
      max: 1,
      idle_timeout: 0,
      max_lifetime: null,
      fetch_types: false,
      onclose: () => this.resubscribe(),
    });
  }

  async listen(channel: string, onPayload: (payload: string) => void): Promise<void> {
    const handlers = this.handlers.get(channel);
    if (handlers) {
      handlers.push(onPayload);
      return;
    }
    this.handlers.set(channel, [onPayload]);
    try {
      await this.sql.unsafe(listenStatement(channel));
    } catch (error) {
      this.handlers.delete(channel);
      throw translatePostgresError(error);
    }
  }

  /** Calls `handler` after every lost connection, once listening works again. */
  onResumed(handler: () => void): void {
    this.resumed.push(handler);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
    await this.sql.end({ timeout: 0 });
  }

  /** After a lost connection: LISTEN on every channel again, until it works or we close. */
  private resubscribe(): void {
    if (this.closed || this.resubscribing || this.handlers.size === 0) return;
    this.resubscribing = (async () => {
      for (let attempt = 0; !this.closed; attempt++) {
        try {
          for (const channel of this.handlers.keys()) {
            await this.sql.unsafe(listenStatement(channel));
          }
          // What was told while the connection was down is lost: whoever relies on it re-reads.
          for (const handler of this.resumed) {
            try {
              handler();
            } catch (error) {
              queueMicrotask(() => {
                throw error;
              });
            }
          }
          return;
        } catch {
          await new Promise<void>((resolve) => {
            this.wake = resolve;
            // unref: a listener waiting for its server never keeps the process alive.
            setTimeout(resolve, retryDelay(attempt)).unref();
          });
        }
      }
    })().finally(() => {
      this.resubscribing = null;
      this.wake = null;
    });
  }
}

function listenStatement(channel: string): string {
  return `listen "${channel.replace(/"/g, '""')}"`;
}
