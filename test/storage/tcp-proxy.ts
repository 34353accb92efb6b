import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * What a relayed connection does: passes both ways; holds (the server's replies are dropped:
 * the server acts, the client never hears); or is severed (its server end is gone while the
 * client still holds its socket, as a stale pooled connection: what the client sends next is
 * never read, and its socket closes).
 */
type Mode = 'pass' | 'held' | 'severed';

interface Pair {
  client: Socket;
  upstream: Socket;
  mode: Mode;
}

/**
 * A TCP relay on a port of its own in front of a server (PostgreSQL), which a test can take down
 * (every connection dropped, new ones refused) and bring back on the same port, or make lose the
 * connections it holds in each of the ways a connection is lost (`hold`, `cut`, `sever`): a
 * server going away and coming back, without touching the server itself.
 */
export class TcpProxy {
  private readonly pairs = new Set<Pair>();
  private server: Server | null = null;
  port = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetHost, targetPort);
    await proxy.up();
    return proxy;
  }

  /** Accepts connections again, on the same port as before; nothing when it already does. */
  async up(): Promise<void> {
    if (this.server) return;
    const server = createServer((client) => this.relay(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  private relay(client: Socket): void {
    const upstream = createConnection(this.targetPort, this.targetHost);
    const pair: Pair = { client, upstream, mode: 'pass' };
    this.pairs.add(pair);
    const drop = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk) => (pair.mode === 'severed' ? drop() : upstream.write(chunk)));
    upstream.on('data', (chunk) => pair.mode === 'pass' && client.write(chunk));
    client.on('error', drop);
    client.on('close', drop);
    // A severed connection's server end is gone on purpose: the client learns it when it sends.
    upstream.on('error', () => pair.mode === 'severed' || drop());
    upstream.on('close', () => pair.mode === 'severed' || drop());
  }

  /** From now on, the replies on every open connection are withheld. */
  hold(): void {
    for (const pair of this.pairs) pair.mode = 'held';
  }

  /** Drops every open connection (the client sees it closed); new ones are taken as before. */
  cut(): void {
    for (const pair of [...this.pairs]) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
  }

  /** Ends every open connection's server end, unknown to the client until it sends. */
  sever(): void {
    for (const pair of this.pairs) {
      pair.mode = 'severed';
      pair.upstream.destroy();
    }
  }

  /** Drops every connection at once and refuses new ones until `up`. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    const closed = server && new Promise<void>((resolve) => server.close(() => resolve()));
    this.cut();
    await closed;
  }

  /** Where a client reaches `url`'s server through this relay. */
  rewrite(url: string): string {
    const proxied = new URL(url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(this.port);
    return proxied.toString();
  }
}
