import type { Principal } from '../../actors/kernel/principal.ts';
import type { Services } from '../../actors/kernel/services.ts';
import { contentTypeOf } from '../../actors/files/content-type.ts';
import { LinkRefused } from '../../actors/files/storage-links.ts';
import { versionProperties } from '../../actors/files/version-properties.ts';
import { OPERATIONS } from '../../protocol/operations.ts';
import { MAX_PAGE_LIMIT } from '../../protocol/paging.ts';
import { STORAGE_LINK_PREFIX } from '../../protocol/files/storage-links.ts';
import type { EngineRequest, EngineResponse } from '../http/engine.ts';
import { run } from '../invoke.ts';
import { enumerationResultsXml } from './azure-xml.ts';

/**
 * List Blobs on a container link (`?restype=container&comp=list`): list_files as the link's
 * agent, in Azure's `EnumerationResults`. `marker` is list_files' cursor; `delimiter` folds
 * names into `BlobPrefix` entries within the page. Every blob has its `Content-MD5`;
 * `include=metadata` adds its `<Metadata>`.
 */
export async function listBlobs(
  services: Services,
  principal: Principal,
  call: { request: EngineRequest; query: URLSearchParams; workspaceId: string },
): Promise<EngineResponse> {
  const { query } = call;
  const prefix = query.get('prefix') ?? '';
  const delimiter = query.get('delimiter') ?? undefined;
  const marker = query.get('marker') ?? '';
  const include = (query.get('include') ?? '').split(',');
  const withMetadata = include.includes('metadata');
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
      limit: Math.min(maxResults ?? MAX_PAGE_LIMIT, MAX_PAGE_LIMIT),
      ...(prefix !== '' && { prefix }),
      ...(marker !== '' && { cursor: marker }),
    },
    { signal: call.request.signal },
  )) as {
    files: { path: string; size: number; sha256: string; saved_at: string; version: number }[];
    next_cursor: string | null;
  };
  const properties = await versionProperties(services, call.workspaceId, page.files);
  const blobs = [];
  const prefixes = new Set<string>();
  for (const file of page.files) {
    const cut = delimiter ? file.path.indexOf(delimiter, prefix.length) : -1;
    if (delimiter && cut >= 0) prefixes.add(file.path.slice(0, cut + delimiter.length));
    else {
      const { contentMd5, metadata } = properties(file.path, file.version);
      blobs.push({
        name: file.path,
        size: file.size,
        etag: `"${file.sha256}"`,
        contentType: contentTypeOf(file.path),
        modifiedAt: new Date(file.saved_at),
        contentMd5,
        ...(withMetadata && { metadata }),
      });
    }
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
