import { randomUUID } from 'node:crypto';
import { saveFile, type SaveOptions } from '../../actors/files/versions.ts';
import { assertMayChange, readable } from '../../actors/workspaces/access.ts';
import type { Principal } from '../../actors/kernel/principal.ts';
import type { Services } from '../../actors/kernel/services.ts';
import { commitBlocks, stageBlock } from '../../actors/files/staged-blocks.ts';
import { LinkRefused, type VerifiedLink } from '../../actors/files/storage-links.ts';
import type { FileBytes } from '../../actors/files/version-properties.ts';
import { ServiceError } from '../../protocol/errors.ts';
import {
  hasDateCondition,
  httpDate,
  readDates,
  writeDatesHold,
} from '../../protocol/conditional-dates.ts';
import { OPERATIONS } from '../../protocol/operations.ts';
import {
  AZURE_STORAGE_VERSION,
  MAX_BLOCK_BYTES,
  STORAGE_LINK_PREFIX,
} from '../../protocol/files/storage-links.ts';
import { byteResponse } from '../http/byte-reply.ts';
import type { EngineRequest, EngineResponse } from '../http/engine.ts';
import { decodeSegment } from '../http/router.ts';
import { parseFileName } from '../../protocol/files/path.ts';
import { run } from '../invoke.ts';
import { errorXml, parseBlockList } from './azure-xml.ts';
import { listBlobs } from './list-blobs.ts';
import {
  asAzureMd5,
  fileBytes,
  propertyHeaders,
  requestContentSettings,
  requestMetadata,
  setBlobMetadata,
  statedMd5s,
} from './blob-properties.ts';
import {
  asRefusal,
  copyFromUrlRefused,
  verbRefused,
  fileLinkOnContainer,
  makerStopped,
  need,
  permissionMismatch,
  suspended,
  unsupported,
} from './refusals.ts';

/** Where storage links live: the start-up routes their requests here. */
export { STORAGE_LINK_PREFIX };
/**
 * The storage-link door: the calls Azure Blob clients make with a SAS, served for the
 * service's own links (actors/files/storage-links.ts; the "Storage links" section of /protocol). It sits beside the
 * REST, MCP and socket doors and reaches files through the same handlers and version-recording
 * functions they use, acting as the agent the link was made for:
 *
 *   PUT  <container>/<path>                      Put Blob (x-ms-blob-type: BlockBlob)   201
 *   PUT  <container>/<path>?comp=block&blockid=  Put Block                              201
 *   PUT  <container>/<path>?comp=blocklist       Put Block List (XML body)              201
 *   PUT  <container>/<path>?comp=metadata        Set Blob Metadata (no new version)     200
 *   GET  <container>/<path>                      Get Blob (Range or x-ms-range: 206)    200
 *   HEAD <container>/<path>                      Get Blob Properties                    200
 *   GET  <container>?restype=container&comp=list List Blobs (prefix, maxresults, marker,
 *                                                delimiter)                             200
 *   GET  <container>?restype=container           Get Container Properties               200
 *
 * A PUT that names `x-ms-copy-source` (a copy from a URL) is refused 409 FeatureNotSupported.
 * Refusals are Azure's XML `<Error>` with `x-ms-error-code`; every answer carries
 * `x-ms-request-id`, `x-ms-version` and echoes `x-ms-client-request-id`.
 */

/**
 * The methods a link serves, on a container (List Blobs, its properties) and on a blob (DELETE
 * is refused by its permission, as Azure refuses a delete a SAS does not allow); any other is
 * 405 UnsupportedHttpVerb with Allow, before the link is read.
 */
const CONTAINER_METHODS = ['GET', 'HEAD', 'OPTIONS'];
const BLOB_METHODS = ['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BLOCK_LIST_MAX_BYTES = 8 * 1024 * 1024;

const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': '*',
};

interface LinkRequest {
  request: EngineRequest;
  query: URLSearchParams;
  workspaceId: string;
  /** The file, decoded, as its NFC key; undefined for the container. */
  path: string | undefined;
  /** The file's name as the client spelt it, which a save keeps (listings show it). */
  pathAsSent: string | undefined;
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
      const call = parse(request);
      const allowed = call.path === undefined ? CONTAINER_METHODS : BLOB_METHODS;
      if (!allowed.includes(request.method)) {
        headers.allow = allowed.join(', ');
        throw verbRefused(request);
      }
      const response = await serve(services, call, log);
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
      };
    }
  };
}

function parse(request: EngineRequest): LinkRequest {
  const rest = request.path.slice(STORAGE_LINK_PREFIX.length + 1);
  const slash = rest.indexOf('/');
  const container = slash < 0 ? rest : rest.slice(0, slash);
  const blob = slash < 0 ? '' : rest.slice(slash + 1);
  const name = blob === '' ? undefined : blobName(blob);
  return {
    request,
    query: new URLSearchParams(request.query),
    workspaceId: decodeSegment(container).toLowerCase(),
    path: name?.path,
    pathAsSent: name?.asSent,
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
    need(link.canRead, 'read');
    await readableByLink(services, principal, call.workspaceId);
    if (comp === 'list') return listBlobs(services, principal, call);
    if (comp === null) return { status: 200, headers: {}, body: '' };
    throw unsupported(request);
  }
  const path = call.path;
  const pathAsSent = call.pathAsSent ?? path;
  if (method === 'PUT') {
    need(link.canWrite, 'write');
    const workspace = await readableByLink(services, principal, call.workspaceId);
    if (request.headers['x-ms-copy-source'] !== undefined) throw copyFromUrlRefused(request);
    if (comp === 'block') {
      const blockId = query.get('blockid') ?? '';
      const body = request.stream(MAX_BLOCK_BYTES);
      await stageBlock(
        services,
        principal,
        workspace,
        path,
        blockId,
        body,
        request.signal,
        request.headers['content-md5'],
      );
      return { status: 201, headers: { 'x-ms-request-server-encrypted': 'true' }, body: '' };
    }
    if (comp === 'metadata') {
      const condition = writeCondition(request);
      return setBlobMetadata(services, principal, workspace.workspaceId, path, request, condition);
    }
    if (comp === 'blocklist') {
      const metadata = requestMetadata(request);
      const contentMd5 = request.headers['x-ms-blob-content-md5'];
      const entries = parseBlockList((await request.body(BLOCK_LIST_MAX_BYTES)).toString('utf8'));
      if (entries === null) {
        throw new LinkRefused(400, 'InvalidXmlDocument', 'The body is not a <BlockList> document.');
      }
      const ids = entries.map((entry) => entry.blockId);
      const receipt = await commitBlocks(
        services,
        principal,
        workspace,
        path,
        ids,
        request.signal,
        {
          precondition: writeCondition(request),
          metadata,
          contentSettings: requestContentSettings(request),
          pathAsSent,
          ...(contentMd5 && { contentMd5 }),
        },
      );
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
    assertMayChange(workspace, principal, 'write to');
    const metadata = requestMetadata(request);
    const body = request.stream(Number.MAX_SAFE_INTEGER);
    const condition = writeCondition(request);
    const { receipt, stored } = await asAzureMd5(
      saveFile(services, principal, workspace, path, body, {
        maxBytes: Number.MAX_SAFE_INTEGER,
        signal: request.signal,
        statedMd5s: statedMd5s(request),
        ...(condition && { precondition: condition }),
        metadata,
        contentSettings: requestContentSettings(request),
        pathAsSent,
      }),
    );
    return saved(receipt, stored.contentMd5);
  }
  if (method === 'GET' || method === 'HEAD') {
    if (comp !== null) throw unsupported(request);
    need(link.canRead, 'read');
    await readableByLink(services, principal, call.workspaceId);
    const reply = fileBytes(
      await run(
        services,
        OPERATIONS.read_file,
        principal,
        { workspace_id: call.workspaceId, path },
        { signal: request.signal },
      ),
    );
    return readBlob(request, path, reply, log);
  }
  if (method === 'DELETE') need(false, 'delete');
  throw unsupported(request);
}

/**
 * A write's conditional headers, as Azure clients send them: `If-None-Match: *` (create only;
 * the Python SDK's default, `overwrite=False`) answers 409 BlobAlreadyExists over an existing
 * file; `If-Match` with another ETag answers 412 ConditionNotMet, and so do `If-Unmodified-Since`
 * and `If-Modified-Since` that do not hold (protocol/conditional-dates.ts). Checked in the
 * commit's transaction, so two racing creates cannot both win.
 */
function writeCondition(request: EngineRequest): SaveOptions['precondition'] {
  const ifNoneMatch = request.headers['if-none-match']?.trim();
  const ifMatch = request.headers['if-match']?.trim();
  const dated = hasDateCondition(request.headers);
  if (ifNoneMatch === undefined && ifMatch === undefined && !dated) return undefined;
  const names = (header: string, etag: string) =>
    header === '*' || header.split(',').some((tag) => tag.trim() === etag);
  return (current) => {
    const etag = current ? `"${current.sha256}"` : null;
    if (ifNoneMatch !== undefined && etag !== null && names(ifNoneMatch, etag)) {
      throw new LinkRefused(409, 'BlobAlreadyExists', 'The specified blob already exists.');
    }
    if (ifMatch !== undefined && (etag === null || !names(ifMatch, etag))) {
      throw conditionNotMet();
    }
    if (dated && !writeDatesHold(request.headers, current)) throw conditionNotMet();
  };
}

function conditionNotMet(): LinkRefused {
  return new LinkRefused(
    412,
    'ConditionNotMet',
    'The condition specified using HTTP conditional header(s) is not met.',
  );
}

/**
 * The agent the link acts for, as it is now, with the reach of the token that made it: a link
 * outlives neither its token (revoked, rotated out, expired) nor its agent's standing (suspended).
 */
async function linkPrincipal(services: Services, link: VerifiedLink): Promise<Principal> {
  const agent = UUID.test(link.agentId) ? await services.agents.get(link.agentId) : undefined;
  if (!agent) {
    throw new LinkRefused(403, 'AuthenticationFailed', 'The agent of this link is not known.');
  }
  if (link.tokenId === null) {
    if (await services.suspensions.isSuspended(agent.agentId)) throw makerStopped(suspended());
    return agent.principal;
  }
  const grant = await services.tokens.grantById(link.tokenId).catch((error: unknown) => {
    throw error instanceof ServiceError && error.code === 'unauthorized'
      ? makerStopped(error)
      : error;
  });
  if (grant.agentId !== agent.agentId) {
    throw new LinkRefused(403, 'AuthenticationFailed', 'The agent of this link is not known.');
  }
  return services.tokens.principalFor(grant, agent.principal);
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

/**
 * A write's 201. Put Blob also answers the MD5 the service computed of the bytes (`Content-MD5`),
 * as Azure does, so a client can check what arrived; Put Block List names no body MD5.
 */
function saved(
  receipt: { sha256: string; saved_at: string; version: number },
  contentMd5?: string,
): EngineResponse {
  return {
    status: 201,
    headers: {
      etag: `"${receipt.sha256}"`,
      'last-modified': httpDate(new Date(receipt.saved_at)),
      'x-ms-request-server-encrypted': 'true',
      'x-ms-version-id': String(receipt.version),
      ...(contentMd5 !== undefined && { 'content-md5': contentMd5 }),
    },
    body: '',
  };
}

async function readBlob(
  request: EngineRequest,
  path: string,
  reply: FileBytes,
  log: (error: unknown) => void,
): Promise<EngineResponse> {
  const etag = `"${reply.etag}"`;
  const ifMatch = request.headers['if-match'];
  if (
    ifMatch !== undefined &&
    ifMatch.trim() !== '*' &&
    !ifMatch.split(',').some((tag) => tag.trim() === etag)
  ) {
    throw conditionNotMet();
  }
  // Refused here in Azure's words; the byte reply answers If-Modified-Since (304) itself.
  const lastModified = reply.lastModified;
  if (lastModified && readDates(request.headers, lastModified) === 'precondition_failed') {
    throw conditionNotMet();
  }
  // Azure takes x-ms-range before Range.
  const range = request.headers['x-ms-range'] ?? request.headers.range;
  const ranged: EngineRequest = Object.create(request, {
    headers: { value: { ...request.headers, ...(range !== undefined && { range }) } },
  });
  const { 'content-type': contentType, ...properties } = propertyHeaders(path, reply);
  const response = await byteResponse(
    ranged,
    200,
    { ...reply, contentType: contentType ?? reply.contentType },
    {
      'x-ms-blob-type': 'BlockBlob',
      'x-ms-server-encrypted': 'true',
      'x-ms-lease-state': 'available',
      'x-ms-lease-status': 'unlocked',
      ...properties,
      // The type is the one the saver named, `text/html` included, and this is the service's
      // own origin: a browser shown the blob runs nothing and guesses no other type.
      'content-security-policy': 'sandbox',
      'x-content-type-options': 'nosniff',
    },
    log,
  );
  // Azure names the failed condition on a 304 too; the SDKs raise ResourceNotModifiedError
  // from it (without it, a generic error).
  if (response.status === 304) response.headers['x-ms-error-code'] = 'ConditionNotMet';
  return response;
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

/**
 * The blob name as a file path, decoded and checked as the router does a rest parameter: azcopy
 * and the Go SDK send nested names as `dir%2Ffile`, which is `dir/file`. Answers its NFC key
 * and the spelling sent, which a save keeps.
 */
function blobName(raw: string): { path: string; asSent: string } {
  return parseFileName(decodeSegment(raw), 'path');
}
