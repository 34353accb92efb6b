import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as assert from 'uvu/assert';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.ts';
import { freshDatabaseUrl, postgresSuite } from '../helpers/storage.ts';

/**
 * The per-address limits across processes (issue 24, "rate limits shared"), on PostgreSQL: two
 * real service processes on one database lease credit from one bucket per address, so requests
 * alternating between them are refused at the limit in total, not per process, with the same
 * 429 problem and Retry-After as one process gives.
 */
const test = postgresSuite('per-address limits hold across processes');

async function twoProcesses(
  env: Record<string, string>,
): Promise<[ServiceProcess, ServiceProcess]> {
  const databaseUrl = await freshDatabaseUrl();
  const a = await startServiceProcess({ DATABASE_URL: databaseUrl, ...env });
  try {
    return [a, await startServiceProcess({ DATABASE_URL: databaseUrl, ...env })];
  } catch (error) {
    await a.stop();
    throw error;
  }
}

async function refusalOf(response: Response): Promise<void> {
  assert.is(response.status, 429);
  assert.is(response.headers.get('content-type'), 'application/problem+json');
  const retryAfter = Number(response.headers.get('retry-after'));
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  assert.is(response.headers.get('ratelimit-remaining'), '0');
  assert.is(response.headers.get('ratelimit-policy'), '6;w=60');
  const problem = (await response.json()) as { code: string; retry_after_seconds: number };
  assert.is(problem.code, 'rate_limited');
  assert.is(problem.retry_after_seconds, retryAfter);
}

test('requests alternating between two processes are refused at the limit in total', async () => {
  const processes = await twoProcesses({ RATE_LIMIT_PER_MINUTE: '6' });
  try {
    const statuses: number[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 10; i++) {
      const response = await fetch(`${processes[i % 2]!.baseUrl}/whoami`);
      statuses.push(response.status);
      if (response.status === 429) refused ??= response;
      else await response.arrayBuffer();
    }
    // 401: counted, then refused for want of a token; past six in all, 429 on both processes.
    assert.equal(statuses, [401, 401, 401, 401, 401, 401, 429, 429, 429, 429]);
    await refusalOf(refused!);
  } finally {
    await Promise.all(processes.map((process) => process.stop()));
  }
});

test('sign-ups alternating between two processes are refused at the limit in total', async () => {
  const processes = await twoProcesses({ SIGNUP_LIMIT_PER_HOUR: '3' });
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const response = await fetch(`${processes[i % 2]!.baseUrl}/agents`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: `sign-up ${i}` }),
      });
      statuses.push(response.status);
      if (response.status === 429) {
        assert.ok(Number(response.headers.get('retry-after')) >= 1);
        assert.is(((await response.json()) as { code: string }).code, 'rate_limited');
      } else await response.arrayBuffer();
    }
    assert.equal(statuses, [201, 201, 201, 429, 429, 429]);
  } finally {
    await Promise.all(processes.map((process) => process.stop()));
  }
});

/** An MCP client of `process`, the SDK's own; closed by `use`'s end. */
async function withMcp<T>(process: ServiceProcess, use: (client: Client) => Promise<T>) {
  const client = new Client({ name: 'sign-up limits', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${process.baseUrl}/mcp`)));
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

/** An MCP sign_up's outcome: `signed up`, or the code of the problem it was refused with. */
async function mcpSignUp(client: Client, name: string): Promise<string> {
  const result = (await client.callTool({ name: 'sign_up', arguments: { name } })) as {
    isError?: boolean;
    content: { text: string }[];
  };
  if (!result.isError) return 'signed up';
  return (JSON.parse(result.content[0]!.text) as { code: string }).code;
}

async function restSignUp(process: ServiceProcess, name: string): Promise<string> {
  const response = await fetch(`${process.baseUrl}/agents`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  const body = (await response.json()) as { code?: string };
  return response.status === 201 ? 'signed up' : `${response.status} ${body.code}`;
}

test('a fresh process admits MCP sign-ups up to the limit at once, then refuses them', async () => {
  // Its first sign_up finds no credit in hand: it waits for a lease rather than being refused.
  const only = await startServiceProcess({
    DATABASE_URL: await freshDatabaseUrl(),
    SIGNUP_LIMIT_PER_HOUR: '3',
  });
  try {
    const outcomes = await withMcp(only, async (client) => {
      const seen: string[] = [];
      for (let i = 0; i < 4; i++) seen.push(await mcpSignUp(client, `mcp sign-up ${i}`));
      return seen;
    });
    assert.equal(outcomes, ['signed up', 'signed up', 'signed up', 'rate_limited']);
  } finally {
    await only.stop();
  }
});

test('MCP sign-ups on one process and REST sign-ups on another spend one limit', async () => {
  const [a, b] = await twoProcesses({ SIGNUP_LIMIT_PER_HOUR: '3' });
  try {
    const outcomes = await withMcp(a, async (client) => [
      await mcpSignUp(client, 'over MCP on A'),
      await restSignUp(b, 'over REST on B'),
      await mcpSignUp(client, 'over MCP on A again'),
      await mcpSignUp(client, 'over MCP on A past the limit'),
      await restSignUp(b, 'over REST on B past the limit'),
    ]);
    assert.equal(outcomes, [
      'signed up',
      'signed up',
      'signed up',
      'rate_limited',
      '429 rate_limited',
    ]);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

/** A JSON-RPC batch of `size` whoami calls, posted to `process` with `token`. */
async function whoamiBatch(process: ServiceProcess, token: string, size: number) {
  const response = await fetch(`${process.baseUrl}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify(
      Array.from({ length: size }, (_, index) => ({
        jsonrpc: '2.0',
        id: index + 1,
        method: 'tools/call',
        params: { name: 'whoami', arguments: {} },
      })),
    ),
  });
  assert.is(response.status, 200);
  return (await response.json()) as { id: number; error?: { data?: { code?: string } } }[];
}

test('each call of an MCP batch waits for shared credit: a fresh process serves the limit', async () => {
  const [a, b] = await twoProcesses({ RATE_LIMIT_PER_MINUTE: '12' });
  try {
    const token = (
      (await (
        await fetch(`${a.baseUrl}/agents`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'batcher' }),
        })
      ).json()) as { api_token: string }
    ).api_token;
    // One request spent on A; a batch of 8 on B, which holds no credit yet: all 8 are served.
    const first = await whoamiBatch(b, token, 8);
    assert.equal(
      first.filter((answer) => answer.error).map((answer) => answer.id),
      [],
      'no call of the batch is refused',
    );
    // 9 of 12 spent: of a batch of 5 on A, the first 3 are served and the last 2 refused.
    const second = await whoamiBatch(a, token, 5);
    assert.equal(
      second.map((answer) => answer.error?.data?.code ?? 'served'),
      ['served', 'served', 'served', 'rate_limited', 'rate_limited'],
    );
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

test.run();
