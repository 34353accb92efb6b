import type { FileBytes } from '../../actors/files/version-properties.ts';
import { metadataFromHeaders, metadataHeaders } from '../../actors/files/blob-metadata.ts';
import {
  contentSettingHeaders,
  contentSettingsFromHeaders,
} from '../../actors/files/content-settings.ts';
import type { ContentSettings } from '../../actors/files/version-properties.ts';
import { md5Mismatch } from '../../actors/files/staged-blocks.ts';
import { replaceMetadata, type SaveOptions } from '../../actors/files/versions.ts';
import type { Principal } from '../../actors/kernel/principal.ts';
import type { Services } from '../../actors/kernel/services.ts';
import { isReply } from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import type { EngineRequest, EngineResponse } from '../http/engine.ts';

/**
 * What storage links keep beside a blob's bytes and answer with it: its MD5 (`Content-MD5`,
 * `x-ms-blob-content-md5`), its metadata (`x-ms-meta-*`) and its content settings
 * (`x-ms-blob-content-type` and siblings, answered as `Content-Type` and siblings), per version
 * (actors/files/content-md5.ts, actors/files/blob-metadata.ts, actors/files/content-settings.ts).
 */

/** The MD5s a Put Blob states: the transactional `Content-MD5` and the blob's own. */
export function statedMd5s(request: EngineRequest): string[] {
  return [request.headers['content-md5'], request.headers['x-ms-blob-content-md5']].filter(
    (value): value is string => value !== undefined,
  );
}

/** The metadata of a Put Blob, Put Block List or Set Blob Metadata (refused as Azure does). */
export function requestMetadata(request: EngineRequest): Record<string, string> {
  return metadataFromHeaders(request.headers);
}

/** The content settings of a Put Blob or Put Block List. */
export function requestContentSettings(request: EngineRequest): ContentSettings {
  return contentSettingsFromHeaders(request.headers);
}

/** Runs a save, answering a wrong MD5 as Azure does (400 Md5Mismatch). */
export async function asAzureMd5<T>(save: Promise<T>): Promise<T> {
  try {
    return await save;
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'content_md5_mismatch') {
      throw md5Mismatch();
    }
    throw error;
  }
}

/** read_file's answer as the bytes and the properties kept with them. */
export function fileBytes(result: unknown): FileBytes {
  return (isReply(result) ? result.body : result) as FileBytes;
}

/**
 * A blob's properties as Get Blob and Get Blob Properties answer them, `Content-Type` (the type
 * its save named, else the path's) among them. `Content-MD5` is the
 * whole blob's: the byte reply drops it from a partial 206 (whose body it is not), while
 * `x-ms-blob-content-md5` always names the whole.
 */
export function propertyHeaders(path: string, bytes: FileBytes): Record<string, string> {
  return {
    ...contentSettingHeaders(path, bytes),
    ...(bytes.contentMd5 !== null && {
      'content-md5': bytes.contentMd5,
      'x-ms-blob-content-md5': bytes.contentMd5,
    }),
    ...metadataHeaders(bytes.metadata),
  };
}

/**
 * Set Blob Metadata (`PUT ?comp=metadata`): replaces the current version's metadata. The bytes
 * do not change, so neither do the version, the receipt or the ETag, and no `file.saved` is
 * sent (Azure gives the blob a new ETag; here the ETag is the sha256 of the bytes).
 */
export async function setBlobMetadata(
  services: Services,
  principal: Principal,
  workspaceId: string,
  path: string,
  request: EngineRequest,
  precondition: SaveOptions['precondition'],
): Promise<EngineResponse> {
  const metadata = requestMetadata(request);
  const current = await replaceMetadata(
    services,
    principal,
    workspaceId,
    path,
    metadata,
    precondition,
  );
  return {
    status: 200,
    headers: {
      etag: `"${current.sha256}"`,
      'last-modified': current.savedAt.toUTCString(),
      'x-ms-request-server-encrypted': 'true',
    },
    body: '',
  };
}
