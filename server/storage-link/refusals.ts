import { ServiceError } from '../../protocol/errors.ts';
import { LinkRefused } from '../../actors/files/storage-links.ts';
import type { EngineRequest } from '../http/engine.ts';

/** How the storage-link door refuses: Azure's error codes for every failure it can meet. */

export function need(allowed: boolean, doing: string): void {
  if (!allowed) {
    throw permissionMismatch(
      doing === 'delete'
        ? 'Storage links do not delete; use delete_file with your API token.'
        : `This link does not permit ${doing === 'write' ? 'writing: it is a read link' : 'reading'}.`,
    );
  }
}

export function permissionMismatch(message: string): LinkRefused {
  return new LinkRefused(
    403,
    'AuthorizationPermissionMismatch',
    `This request is not authorized to perform this operation using this permission. ${message}`,
  );
}

export function unsupported(request: EngineRequest): LinkRefused {
  return new LinkRefused(
    400,
    'UnsupportedHttpVerb',
    `Storage links take Put Blob, Put Block, Put Block List, Set Blob Metadata, Get Blob, Get Blob Properties and List Blobs; not ${request.method}${described(request)}.`,
  );
}

/** A method no storage link serves at that place: 405, as Azure answers UnsupportedHttpVerb. */
export function verbRefused(request: EngineRequest): LinkRefused {
  return new LinkRefused(
    405,
    'UnsupportedHttpVerb',
    `Storage links take GET, HEAD and PUT (and DELETE, which a link's permission refuses); not ${request.method}${described(request)}.`,
  );
}

/**
 * A copy from a URL (`x-ms-copy-source`: Copy Blob, Copy Blob From URL, Put Blob From URL, Put
 * Block From URL) is refused before anything is read or stored: served as a plain Put it would
 * save an empty body over the file. 409, the status Azure gives an operation it does not support
 * in a given place (BlobOperationNotSupported); unlike a 5xx, the SDKs do not retry it.
 */
export function copyFromUrlRefused(request: EngineRequest): LinkRefused {
  return new LinkRefused(
    409,
    'FeatureNotSupported',
    `Storage links do not copy from a URL (${copyOperation(request)}): download the source's bytes and upload them instead.`,
  );
}

/** Which of Azure's copy calls a request carrying x-ms-copy-source is. */
function copyOperation(request: EngineRequest): string {
  const comp = new URLSearchParams(request.query).get('comp');
  if (comp === 'block') return 'Put Block From URL';
  if (comp !== null) return `x-ms-copy-source with comp=${comp}`;
  if (request.headers['x-ms-blob-type'] !== undefined) return 'Put Blob From URL';
  if (request.headers['x-ms-requires-sync']?.trim().toLowerCase() === 'true') {
    return 'Copy Blob From URL';
  }
  return 'Copy Blob';
}

/** The operation a request names (comp, restype), never its signature. */
function described(request: EngineRequest): string {
  const query = new URLSearchParams(request.query);
  const named = ['restype', 'comp']
    .filter((name) => query.has(name))
    .map((name) => `${name}=${query.get(name)}`);
  return named.length === 0 ? '' : ` with ${named.join('&')}`;
}

/**
 * A link whose token or agent stopped working: 403 AuthenticationFailed (the SDKs do not retry
 * it), with the 401's words (`why`) as the detail, so the agent learns which it is.
 */
export function makerStopped(why: ServiceError): LinkRefused {
  return new LinkRefused(
    403,
    'AuthenticationFailed',
    'Server failed to authenticate the request. The API token that made this link no longer works.',
    why.message,
  );
}

/** Why a link made with no token (by mail) stopped: its agent is suspended. */
export function suspended(): ServiceError {
  return new ServiceError(
    'unauthorized',
    'This agent is suspended by the operator: its links do not work.',
    { reason: 'suspended' },
  );
}

export function fileLinkOnContainer(): LinkRefused {
  return new LinkRefused(
    403,
    'AuthorizationResourceTypeMismatch',
    'This link is for one file, not the whole workspace: ask for a container link (get_storage_link without path).',
  );
}

/** Every failure as Azure would name it. */
export function asRefusal(
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
    case 'storage_full':
    case 'outcome_unknown':
    case 'service_unavailable':
      return as(503, 'ServerBusy');
    default:
      return as(
        error.status >= 500 ? 500 : 400,
        error.status >= 500 ? 'InternalError' : 'InvalidInput',
      );
  }
}
