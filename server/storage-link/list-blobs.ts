import type { Principal } from '../../actors/kernel/principal.ts';
import type { Services } from '../../actors/kernel/services.ts';
import { servedContentType } from '../../actors/files/content-settings.ts';
import { LinkRefused } from '../../actors/files/storage-links.ts';
import { versionProperties } from '../../actors/files/version-properties.ts';
import { OPERATIONS } from '../../protocol/operations.ts';
import { MAX_PAGE_LIMIT } from '../../protocol/paging.ts';
import { parseFilePath } from '../../protocol/files/path.ts';
import { STORAGE_LINK_PREFIX } from '../../protocol/files/storage-links.ts';
import type { EngineRequest, EngineResponse } from '../http/engine.ts';
import { run } from '../invoke.ts';
import { enumerationResultsXml } from './azure-xml.ts';

/**
 * List Blobs on a container link (`?restype=container&comp=list`): list_files as the link's
 * agent, in Azure's `EnumerationResults`. `marker` is list_files' cursor; `delimiter` folds
 * names into `BlobPrefix` entries within the page. Names are spelt as they were saved
 * (list_files shows them so). Every blob has its `Content-MD5` and content settings;
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
  // list_files shows each name as it was saved; its properties are under its NFC key.
  const listed = page.files.map((file) => ({ ...file, key: parseFilePath(file.path) }));
  const properties = await versionProperties(
    services,
    call.workspaceId,
    listed.map((file) => ({ path: file.key, version: file.version })),
  );
  const blobs = [];
  const prefixes = new Set<string>();
  for (const file of listed) {
    const cut = delimiter ? file.path.indexOf(delimiter, prefixEnd(file.path, prefix)) : -1;
    if (delimiter && cut >= 0) prefixes.add(file.path.slice(0, cut + delimiter.length));
    else {
      const { contentMd5, metadata, contentSettings } = properties(file.key, file.version);
      blobs.push({
        name: file.path,
        size: file.size,
        etag: `"${file.sha256}"`,
        contentType: servedContentType(file.key, contentSettings),
        contentSettings,
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

/**
 * Where the prefix ends in a listed name: the prefix matched the name's NFC key, and the name
 * may spell it otherwise (NFD is longer), so find the shortest start of the name that is the
 * prefix in NFC.
 */
function prefixEnd(name: string, prefix: string): number {
  if (name.startsWith(prefix)) return prefix.length;
  const wanted = prefix.normalize('NFC');
  for (let end = 0; end <= name.length; end += 1) {
    if (name.slice(0, end).normalize('NFC') === wanted) return end;
  }
  return prefix.length;
}
