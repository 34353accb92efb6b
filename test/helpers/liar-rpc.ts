/**
 * JSON-RPC servers that are no help, to stand beside a real node in CHAIN_RPC_URLS: one that
 * never answers (a provider that hangs), and one that answers every call with nonsense (a
 * provider that lies or is broken). The service must read both as "unknown", never as a
 * failed payment.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestsEnd } from './resources.ts';

export type LiarMode = 'silent' | 'nonsense';

export interface LiarRpc {
  url: string;
  /** JSON-RPC calls received, by method. */
  calls: Map<string, number>;
  stop(): Promise<void>;
}

/** What a lying node answers to `method`: well-formed JSON-RPC, wrong content. */
function lie(method: string): unknown {
  if (method === 'eth_blockNumber') return 'not a number';
  if (method === 'eth_getTransactionReceipt') return { transactionHash: 42, logs: 'none' };
  if (method === 'eth_getBlockByNumber') return { hash: 'nope', number: '0x0' };
  if (method === 'eth_getLogs') return [{ address: 7 }];
  return 'nonsense';
}

/** Starts a lying JSON-RPC server on 127.0.0.1 (closed at the end of the run). */
export async function startLiarRpc(mode: LiarMode): Promise<LiarRpc> {
  const calls = new Map<string, number>();
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body = (body + chunk).slice(0, 100_000);
    });
    req.on('end', () => {
      let parsed: { id?: unknown; method?: unknown } = {};
      try {
        parsed = JSON.parse(body) as typeof parsed;
      } catch {
        // Answered as nonsense below anyway.
      }
      const method = typeof parsed.method === 'string' ? parsed.method : '?';
      calls.set(method, (calls.get(method) ?? 0) + 1);
      if (mode === 'silent') {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      if (method === 'eth_chainId') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ jsonrpc: '2.0', id: parsed.id ?? 1, result: '0x2105' }));
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id: parsed.id ?? 1, result: lie(method) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const stop = async () => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  let stopped = false;
  const stopOnce = async () => {
    if (stopped) return;
    stopped = true;
    await stop();
  };
  onTestsEnd(stopOnce);
  return { url: `http://127.0.0.1:${port}`, calls, stop: stopOnce };
}
