import { randomUUID } from 'node:crypto';
import {
  request as httpRequest,
  type Agent as HttpAgent,
  type OutgoingHttpHeaders,
} from 'node:http';
import { RestError } from '@azure/storage-blob';
import * as assert from 'uvu/assert';
import { TestClock } from './clock.ts';
import { serverSuite } from './server-suite.ts';
import type { TestServer } from './server.ts';
import type { Agent } from './wire-types.ts';

/**
 * Storage links as Azure clients use them, for the storage link suites: links asked for over
 * the REST API, requests sent to them with a client request id, Azure's XML refusals checked,
 * and what an agent holds, to show that a refusal stored nothing.
 */

export const KiB = 1024;
export const MiB = 1024 * 1024;
/** The storage quota of an agent in storageLinkSuite. */
export const QUOTA = 1024 * 1024;

/** A suite over one server with a QUOTA of storage per agent, on a clock the test moves. */
export function storageLinkSuite(name: string) {
  return serverSuite(name, () => {
    const clock = new TestClock();
    return { extra: { clock }, config: { storageQuotaBytes: QUOTA, clock } };
  });
}

/** What get_storage_link answers. */
export interface StorageLink {
  access: 'read' | 'readwrite';
  file_url?: string;
  container_url?: string;
  sas_token?: string;
  expires_at: string;
}

/** Asks for a link (get_storage_link): the whole workspace, or one file at `path`. */
export function askForLink(
  server: TestServer,
  agent: Agent,
  workspaceId: string,
  access: 'read' | 'readwrite',
  path?: string,
) {
  return server.post(
    `/workspaces/${workspaceId}/sas`,
    { access, ...(path === undefined ? {} : { path }) },
    agent.api_token,
  );
}

/** A link the service grants; fails the test if it refuses. */
export async function storageLink(
  server: TestServer,
  agent: Agent,
  workspaceId: string,
  access: 'read' | 'readwrite',
  path?: string,
): Promise<StorageLink> {
  const response = await askForLink(server, agent, workspaceId, access, path);
  assert.is(response.status, 200, `a ${access} link`);
  return (await response.json()) as StorageLink;
}

/** A readwrite link to the file at `path`. */
export async function fileLink(
  server: TestServer,
  agent: Agent,
  workspaceId: string,
  path: string,
) {
  return (await storageLink(server, agent, workspaceId, 'readwrite', path)).file_url as string;
}

/** What an agent holds as the REST API shows it: files and receipts per workspace, bytes used. */
export async function holdings(
  server: TestServer,
  agent: Pick<Agent, 'api_token'>,
  workspaceIds: string[],
) {
  const read = async (path: string) => {
    const response = await server.get(path, agent.api_token);
    assert.is(response.status, 200, path);
    return response.json();
  };
  const workspaces = [];
  for (const id of workspaceIds) {
    workspaces.push({
      files: await read(`/workspaces/${id}/files`),
      receipts: await read(`/workspaces/${id}/receipts`),
    });
  }
  const who = (await read('/whoami')) as { storage: { used_bytes: number } };
  return { workspaces, usedBytes: who.storage.used_bytes };
}

/** The bytes of storage the agent uses, as whoami shows them. */
export async function usedBytes(
  server: TestServer,
  agent: Pick<Agent, 'api_token'>,
): Promise<number> {
  return (await holdings(server, agent, [])).usedBytes;
}

/** Blocks staged through links and not yet committed, of every agent. */
export async function stagedBlockCount(server: TestServer): Promise<number> {
  const [row] = await server.services.driver.query<{ n: number }>(
    'select count(*)::int8 as n from staged_blocks',
  );
  return Number(row?.n);
}

/** A request to a link, carrying a client request id that every answer must echo. */
export interface Sent {
  response: Response;
  clientRequestId: string;
}

export async function sendToLink(url: string, init: RequestInit = {}): Promise<Sent> {
  const clientRequestId = randomUUID();
  const response = await fetch(url, {
    ...init,
    headers: { 'x-ms-client-request-id': clientRequestId, ...(init.headers ?? {}) },
  });
  return { response, clientRequestId };
}

/** Put Blob: the whole body in one request. */
export const putBlob = (url: string, body: BodyInit, blobType = 'BlockBlob') =>
  sendToLink(url, { method: 'PUT', headers: { 'x-ms-blob-type': blobType }, body });

/** The n-th block id, base64 as Azure clients send it. */
export const blockId = (n: number) =>
  Buffer.from(`block-${String(n).padStart(6, '0')}`).toString('base64');

/** Put Block: one block staged. */
export const putBlock = (url: string, id: string, body: BodyInit) =>
  sendToLink(`${url}&comp=block&blockid=${encodeURIComponent(id)}`, { method: 'PUT', body });

/** A Put Block List body committing `ids` in order. */
export const blockListXml = (ids: string[]) =>
  `<?xml version="1.0" encoding="utf-8"?><BlockList>${ids
    .map((id) => `<Latest>${id}</Latest>`)
    .join('')}</BlockList>`;

/** Put Block List: the staged blocks committed as the file. */
export const putBlockList = (url: string, xml: string) =>
  sendToLink(`${url}&comp=blocklist`, { method: 'PUT', body: xml });

/** Asserts Azure's XML refusal: status, code in header and body, the request ids. */
export async function expectRefusal(sent: Sent, status: number, code: string, what = code) {
  const { response, clientRequestId } = sent;
  const body = await response.text();
  assert.is(response.status, status, `${what}: status (${body})`);
  assert.is(response.headers.get('x-ms-error-code'), code, `${what}: x-ms-error-code`);
  assert.is(response.headers.get('content-type'), 'application/xml');
  assert.ok(body.includes(`<Error><Code>${code}</Code><Message>`), `${what}: the XML error`);
  assert.is(response.headers.get('x-ms-client-request-id'), clientRequestId, `${what}: echoed`);
  assert.match(response.headers.get('x-ms-request-id') ?? '', /^[0-9a-f-]{36}$/);
  return body;
}

/** Sends, expects the refusal, and checks that the agent holds exactly what it held before. */
export async function refusedAndNothingStored(
  server: TestServer,
  agent: Agent,
  workspaceIds: string[],
  request: () => Promise<Sent>,
  status: number,
  code: string,
  what = code,
) {
  const before = await holdings(server, agent, workspaceIds);
  const staged = await stagedBlockCount(server);
  const body = await expectRefusal(await request(), status, code, what);
  assert.equal(await holdings(server, agent, workspaceIds), before, `${what}: nothing stored`);
  assert.is(await stagedBlockCount(server), staged, `${what}: no block staged`);
  return body;
}

/** The link with one SAS field set to `value`. */
export function withField(url: string, name: string, value: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set(name, value);
  return parsed.toString();
}

/** One SAS field of a link. */
export const sasField = (url: string, name: string) =>
  new URL(url).searchParams.get(name) as string;

/** A request that travels exactly as written (no URL normalisation), on the agent given. */
export function rawSend(
  server: TestServer,
  method: string,
  path: string,
  options: { headers?: OutgoingHttpHeaders; body?: string; agent?: HttpAgent } = {},
) {
  const clientRequestId = randomUUID();
  return new Promise<Sent & { reusedSocket: boolean }>((resolve, reject) => {
    const request = httpRequest(
      server.url('/'),
      {
        method,
        path,
        headers: { 'x-ms-client-request-id': clientRequestId, ...options.headers },
        agent: options.agent ?? false,
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(answer.headers)) {
            if (typeof value === 'string') headers.set(name, value);
          }
          const response = new Response(Buffer.concat(chunks), {
            status: answer.statusCode ?? 0,
            headers,
          });
          resolve({ response, clientRequestId, reusedSocket: request.reusedSocket });
        });
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}

/** The refusal an Azure SDK call ends in. */
export async function restError(call: Promise<unknown>): Promise<RestError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof RestError) return error;
    throw error;
  }
  throw new Error('the call was not refused');
}

/** Azure SDK clients try once: a refusal is the answer under test, not a fault to retry. */
export const sdkOptions = { retryOptions: { maxTries: 1 } };
