import { randomUUID } from 'node:crypto';
import { contentTypeOf } from '../../actors/content-type.ts';
import { commitSave, storeFileBytes } from '../../actors/file-versions.ts';
import { readable } from '../../actors/handlers/workspaces.ts';
import type { Principal } from '../../actors/principal.ts';
import type { Services } from '../../actors/services.ts';
import { commitBlocks, stageBlock } from '../../actors/staged-blocks.ts';
import { LinkRefused, type VerifiedLink } from '../../actors/storage-links.ts';
import type { ByteReply } from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { parseFilePath } from '../../protocol/file-path.ts';
import { OPERATIONS } from '../../protocol/operations.ts';
import { AZURE_STORAGE_VERSION, STORAGE_LINK_PREFIX } from '../../protocol/storage-links.ts';
import { byteResponse } from '../http/byte-reply.ts';
import type { EngineRequest, EngineResponse } from '../http/engine.ts';
import { run } from '../invoke.ts';
import { enumerationResultsXml, errorXml, parseBlockList } from './azure-xml.ts';

/**
 * The storage-link door: the calls Azure Blob clients make with a SAS, served for the
 * service's own links (actors/storage-links.ts; the "Storage links" section of /protocol). It sits beside the
 * REST, MCP and socket doors and reaches files through the same handlers and version-recording
 * functions they use, acting as the agent the link was made for:
 *
 *   PUT  <container>/<path>                      Put Blob (x-ms-blob-type: BlockBlob)   201
 *   PUT  <container>/<path>?comp=block&blockid=  Put Block                              201
 *   PUT  <container>/<path>?comp=blocklist       Put Block List (XML body)              201
 *   GET  <container>/<path>                      Get Blob (Range or x-ms-range: 206)    200
 *   HEAD <container>/<path>                      Get Blob Properties                    200
 *   GET  <container>?restype=container&comp=list List Blobs (prefix, maxresults, marker,
 *                                                delimiter)                             200
 *   GET  <container>?restype=container           Get Container Properties               200
 *
 * Refusals are Azure's XML `<Error>` with `x-ms-error-code`; every answer carries
 * `x-ms-request-id`, `x-ms-version` and echoes `x-ms-client-request-id`.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BLOCK_LIST_MAX_BYTES = 8 * 1024 * 1024;
const LIST_MAX_RESULTS = 500;

const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': '*',
};

interface LinkRequest {
  request: EngineRequest;
  query: URLSearchParams;
  workspaceId: string;
  /** The file, decoded; undefined for the container. */
  path: string | undefined;
}

export function createStorageLinkDoor(
  services: Services,
  log: (error: unknown) => void,
): (request: EngineRequest, admitted: () => Record<string, string>) => Promise<EngineResponse> {
  return async (request, admitted) => {
    const requestId = randomUUID();
    const headers: Record<string, string> = {
      'x-ms-request-id': requestId,
      'x-ms-version': AZURE_STORAGE_VERSION,
      ...CORS_HEADERS,
    };
    const clientRequestId = request.headers['x-ms-client-request-id'];
    if (clientRequestId !== undefined) headers['x-ms-client-request-id'] = clientRequestId;
    try {
      Object.assign(headers, admitted());
      if (request.method === 'OPTIONS') return preflight(request, headers);
      const response = await serve(services, parse(request), log);
      Object.assign(response.headers, headers);
      return response;
    } catch (error) {
      const refusal = asRefusal(error, log);
      const time = new Date(services.clock.now());
      Object.assign(headers, refusal.headers, {
        'x-ms-error-code': refusal.azureCode,
        'content-type': 'application/xml',
      });
      return {
        status: refusal.status,
        headers,
        body:
          request.method === 'HEAD'
            ? ''
            : errorXml(refusal.azureCode, refusal.message, requestId, time, refusal.detail),
        // A body refused unread is not drained: the connection closes after the answer.
        ...(request.method === 'PUT' && { close: true }),
      };
    }
  };
}

function parse(request: EngineRequest): LinkRequest {
  const rest = request.path.slice(STORAGE_LINK_PREFIX.length + 1);
  const slash = rest.indexOf('/');
  const container = slash < 0 ? rest : rest.slice(0, slash);
  const blob = slash < 0 ? '' : rest.slice(slash + 1);
  return {
    request,
    query: new URLSearchParams(request.query),
    workspaceId: decode(container).toLowerCase(),
    path: blob === '' ? undefined : blobPath(blob),
  };
}

async function serve(
  services: Services,
  call: LinkRequest,
  log: (error: unknown) => void,
): Promise<EngineResponse> {
  const { request, query } = call;
  // A file link's signature names its file, so on the container it could only fail as a bad
  // signature: say instead which kind of link it is.
  if (call.path === undefined && query.get('sr') === 'b') throw fileLinkOnContainer();
  const link = services.files.links.verify(
    query,
    call.workspaceId,
    call.path,
    services.clock.now(),
  );
  if (!UUID.test(call.workspaceId)) {
    throw new LinkRefused(404, 'ContainerNotFound', 'The specified container does not exist.');
  }
  const principal = await linkPrincipal(services, link);
  const comp = query.get('comp');
  const method = request.method;
  if (call.path === undefined) {
    if (query.get('restype') !== 'container' || (method !== 'GET' && method !== 'HEAD')) {
      throw unsupported(request);
    }
    if (link.resource !== 'c') throw fileLinkOnContainer();
    need(link.canRead, 'read');
    await readableByLink(services, principal, call.workspaceId);
    if (comp === 'list') return listBlobs(services, principal, call);
    if (comp === null) return { status: 200, headers: {}, body: '' };
    throw unsupported(request);
  }
  const path = call.path;
  if (method === 'PUT') {
    need(link.canWrite, 'write');
    const workspace = await readableByLink(services, principal, call.workspaceId);
    if (comp === 'block') {
      const blockId = query.get('blockid') ?? '';
      const body = request.stream(services.storageQuotaBytes);
      await stageBlock(services, principal, workspace, path, blockId, body, request.signal);
      return { status: 201, headers: { 'x-ms-request-server-encrypted': 'true' }, body: '' };
    }
    if (comp === 'blocklist') {
      const entries = parseBlockList((await request.body(BLOCK_LIST_MAX_BYTES)).toString('utf8'));
      if (entries === null) {
        throw new LinkRefused(400, 'InvalidXmlDocument', 'The body is not a <BlockList> document.');
      }
      const ids = entries.map((entry) => entry.blockId);
      const receipt = await commitBlocks(services, principal, workspace, path, ids, request.signal);
      return saved(receipt);
    }
    if (comp !== null) throw unsupported(request);
    const blobType = request.headers['x-ms-blob-type'];
    if (blobType === undefined) {
      throw new LinkRefused(
        400,
        'MissingRequiredHeader',
        'An HTTP header that is mandatory for this request is not specified: x-ms-blob-type (send x-ms-blob-type: BlockBlob).',
      );
    }
    if (blobType !== 'BlockBlob') {
      throw new LinkRefused(
        400,
        'InvalidHeaderValue',
        'Only block blobs are kept here: send x-ms-blob-type: BlockBlob.',
      );
    }
    // No 100 MB cap here: the agent's room in its quota is the only limit, so a body past it
    // is QuotaExceeded (checked again, exactly, on commit).
    const body = request.stream(Number.MAX_SAFE_INTEGER);
    const stored = await storeFileBytes(services, principal, workspace, path, body, {
      maxBytes: Number.MAX_SAFE_INTEGER,
      signal: request.signal,
    });
    return saved(await commitSave(services, principal, workspace.workspaceId, path, stored));
  }
  if (method === 'GET' || method === 'HEAD') {
    if (comp !== null) throw unsupported(request);
    need(link.canRead, 'read');
    await readableByLink(services, principal, call.workspaceId);
    const reply = (await run(
      services,
      OPERATIONS.read_file,
      principal,
      { workspace_id: call.workspaceId, path },
      { signal: request.signal },
    )) as ByteReply;
    return readBlob(request, reply, log);
  }
  if (method === 'DELETE') need(false, 'delete');
  throw unsupported(request);
}

/** The agent the link acts for, as it is now (a link outlives nothing it was not given). */
async function linkPrincipal(services: Services, link: VerifiedLink): Promise<Principal> {
  const agent = UUID.test(link.agentId) ? await services.agents.get(link.agentId) : undefined;
  if (!agent) {
    throw new LinkRefused(403, 'AuthenticationFailed', 'The agent of this link is not known.');
  }
  return agent.principal;
}

/** The workspace, if the link's agent may still read it; else 403 (the link was good once). */
async function readableByLink(services: Services, principal: Principal, workspaceId: string) {
  try {
    return await readable(services, principal, workspaceId);
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'not_found') {
      throw permissionMismatch('The agent of this link may no longer read this workspace.');
    }
    throw error;
  }
}

function need(allowed: boolean, doing: string): void {
  if (!allowed) {
    throw permissionMismatch(
      doing === 'delete'
        ? 'Storage links do not delete; use delete_file with your API token.'
        : `This link does not permit ${doing === 'write' ? 'writing: it is a read link' : 'reading'}.`,
    );
  }
}

function permissionMismatch(message: string): LinkRefused {
  return new LinkRefused(
    403,
    'AuthorizationPermissionMismatch',
    `This request is not authorized to perform this operation using this permission. ${message}`,
  );
}

function unsupported(request: EngineRequest): LinkRefused {
  return new LinkRefused(
    400,
    'UnsupportedHttpVerb',
    `Storage links take Put Blob, Put Block, Put Block List, Get Blob, Get Blob Properties and List Blobs; not ${request.method}${described(request)}.`,
  );
}

/** The operation a request names (comp, restype), never its signature. */
function described(request: EngineRequest): string {
  const query = new URLSearchParams(request.query);
  const named = ['restype', 'comp']
    .filter((name) => query.has(name))
    .map((name) => `${name}=${query.get(name)}`);
  return named.length === 0 ? '' : ` with ${named.join('&')}`;
}

function fileLinkOnContainer(): LinkRefused {
  return new LinkRefused(
    403,
    'AuthorizationResourceTypeMismatch',
    'This link is for one file, not the whole workspace: ask for a container link (get_storage_link without path).',
  );
}

function saved(receipt: { sha256: string; saved_at: string; version: number }): EngineResponse {
  return {
    status: 201,
    headers: {
      etag: `"${receipt.sha256}"`,
      'last-modified': new Date(receipt.saved_at).toUTCString(),
      'x-ms-request-server-encrypted': 'true',
      'x-ms-version-id': String(receipt.version),
    },
    body: '',
  };
}

async function readBlob(
  request: EngineRequest,
  reply: ByteReply,
  log: (error: unknown) => void,
): Promise<EngineResponse> {
  const etag = `"${reply.etag}"`;
  const ifMatch = request.headers['if-match'];
  if (
    ifMatch !== undefined &&
    ifMatch.trim() !== '*' &&
    !ifMatch.split(',').some((tag) => tag.trim() === etag)
  ) {
    throw new LinkRefused(
      412,
      'ConditionNotMet',
      'The condition specified using HTTP conditional header(s) is not met.',
    );
  }
  // Azure takes x-ms-range before Range.
  const range = request.headers['x-ms-range'] ?? request.headers.range;
  const ranged: EngineRequest = Object.create(request, {
    headers: { value: { ...request.headers, ...(range !== undefined && { range }) } },
  });
  const response = await byteResponse(
    ranged,
    200,
    reply,
    {
      'x-ms-blob-type': 'BlockBlob',
      'x-ms-server-encrypted': 'true',
      'x-ms-lease-state': 'available',
      'x-ms-lease-status': 'unlocked',
    },
    log,
  );
  return response;
}

async function listBlobs(
  services: Services,
  principal: Principal,
  call: LinkRequest,
): Promise<EngineResponse> {
  const { query } = call;
  const prefix = query.get('prefix') ?? '';
  const delimiter = query.get('delimiter') ?? undefined;
  const marker = query.get('marker') ?? '';
  const asked = query.get('maxresults');
  const maxResults = asked === null ? undefined : Number(asked);
  if (maxResults !== undefined && !(Number.isInteger(maxResults) && maxResults > 0)) {
    throw new LinkRefused(
      400,
      'OutOfRangeQueryParameterValue',
      'maxresults must be a positive integer.',
    );
  }
  const page = (await run(
    services,
    OPERATIONS.list_files,
    principal,
    {
      workspace_id: call.workspaceId,
      limit: Math.min(maxResults ?? LIST_MAX_RESULTS, LIST_MAX_RESULTS),
      ...(prefix !== '' && { prefix }),
      ...(marker !== '' && { cursor: marker }),
    },
    { signal: call.request.signal },
  )) as {
    files: { path: string; size: number; sha256: string; saved_at: string }[];
    next_cursor: string | null;
  };
  const blobs = [];
  const prefixes = new Set<string>();
  for (const file of page.files) {
    const cut = delimiter ? file.path.indexOf(delimiter, prefix.length) : -1;
    if (delimiter && cut >= 0) prefixes.add(file.path.slice(0, cut + delimiter.length));
    else
      blobs.push({
        name: file.path,
        size: file.size,
        etag: `"${file.sha256}"`,
        contentType: contentTypeOf(file.path),
        modifiedAt: new Date(file.saved_at),
      });
  }
  const base = services.config.baseUrl;
  return {
    status: 200,
    headers: { 'content-type': 'application/xml' },
    body: enumerationResultsXml({
      serviceEndpoint: `${base}${STORAGE_LINK_PREFIX}/`,
      containerName: call.workspaceId,
      prefix,
      marker,
      maxResults,
      delimiter,
      blobs,
      prefixes: [...prefixes],
      nextMarker: page.next_cursor ?? '',
    }),
  };
}

function preflight(request: EngineRequest, headers: Record<string, string>): EngineResponse {
  return {
    status: 200,
    headers: {
      ...headers,
      'access-control-allow-methods': 'GET, HEAD, PUT, OPTIONS',
      'access-control-allow-headers': request.headers['access-control-request-headers'] ?? '*',
      'access-control-max-age': '86400',
    },
    body: '',
  };
}

/** Every failure as Azure would name it. */
function asRefusal(
  error: unknown,
  log: (error: unknown) => void,
): LinkRefused & { headers: Record<string, string> } {
  const refusal = toRefusal(error, log);
  return Object.assign(refusal, {
    headers: error instanceof ServiceError ? { ...error.responseHeaders } : {},
  });
}

function toRefusal(error: unknown, log: (error: unknown) => void): LinkRefused {
  if (error instanceof LinkRefused) return error;
  if (!(error instanceof ServiceError)) {
    log(error);
    return new LinkRefused(500, 'InternalError', 'The server encountered an internal error.');
  }
  const as = (status: number, code: string) => new LinkRefused(status, code, error.message);
  switch (error.code) {
    case 'payload_too_large':
      return as(413, 'RequestBodyTooLarge');
    case 'quota_exceeded':
      return as(507, 'QuotaExceeded');
    case 'not_found':
      return as(404, 'BlobNotFound');
    case 'forbidden':
      return as(403, 'AuthorizationPermissionMismatch');
    case 'invalid_path':
      return as(400, 'InvalidResourceName');
    case 'range_not_satisfiable':
      return as(416, 'InvalidRange');
    case 'invalid_cursor':
      return as(400, 'InvalidQueryParameterValue');
    case 'rate_limited':
    case 'conflict':
    case 'storage_unavailable':
    case 'service_unavailable':
      return as(503, 'ServerBusy');
    default:
      return as(
        error.status >= 500 ? 500 : 400,
        error.status >= 500 ? 'InternalError' : 'InvalidInput',
      );
  }
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new LinkRefused(400, 'InvalidUri', 'The requested URI is not valid percent-encoding.');
  }
}

/** The blob name as a file path: segments decoded one by one; an encoded `/` is refused. */
function blobPath(raw: string): string {
  if (/%2f/i.test(raw)) {
    throw new LinkRefused(
      400,
      'InvalidResourceName',
      'A blob name may not hold an encoded `/` (%2F).',
    );
  }
  return parseFilePath(raw.split('/').map(decode));
}
