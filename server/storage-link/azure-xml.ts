import type { ContentSettings } from '../../actors/files/version-properties.ts';

/**
 * The few XML documents of the Azure Blob REST API that storage links speak: errors, the
 * List Blobs answer, and the Put Block List body. Small and strict on purpose: we write only
 * these shapes and read only `<BlockList>`, so no general XML parser is needed.
 */

const XML_DECLARATION = '<?xml version="1.0" encoding="utf-8"?>';

function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (char) => `&${ENTITIES[char]};`);
}

const ENTITIES: Record<string, string> = {
  '<': 'lt',
  '>': 'gt',
  '&': 'amp',
  "'": 'apos',
  '"': 'quot',
};

function unescapeXml(text: string): string {
  return text.replace(/&(lt|gt|amp|apos|quot|#\d+|#x[0-9a-f]+);/gi, (_, name: string) => {
    if (name[0] === '#') {
      const code =
        name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : Number(name.slice(1));
      return String.fromCodePoint(code);
    }
    return { lt: '<', gt: '>', amp: '&', apos: "'", quot: '"' }[name.toLowerCase()] as string;
  });
}

/** Azure's error body: `<Error><Code>..</Code><Message>..</Message>...</Error>`. */
export function errorXml(
  code: string,
  message: string,
  requestId: string,
  time: Date,
  detail?: string,
): string {
  return (
    `${XML_DECLARATION}<Error><Code>${escapeXml(code)}</Code>` +
    `<Message>${escapeXml(`${message}\nRequestId:${requestId}\nTime:${time.toISOString()}`)}</Message>` +
    (detail === undefined
      ? ''
      : `<AuthenticationErrorDetail>${escapeXml(detail)}</AuthenticationErrorDetail>`) +
    '</Error>'
  );
}

interface ListedBlob {
  name: string;
  size: number;
  etag: string;
  /** The type served: the one the save named, else the path's. */
  contentType: string;
  /** The other content settings the save named (actors/files/content-settings.ts). */
  contentSettings: Omit<ContentSettings, 'contentType'>;
  modifiedAt: Date;
  /** Base64 of the MD5 of the bytes, or null when not known. */
  contentMd5: string | null;
  /** Present when the listing includes metadata (`include=metadata`). */
  metadata?: Readonly<Record<string, string>>;
}

export interface BlobListing {
  serviceEndpoint: string;
  containerName: string;
  prefix: string;
  marker: string;
  maxResults: number | undefined;
  delimiter: string | undefined;
  blobs: ListedBlob[];
  /** Names ending in the delimiter, for listings by hierarchy. */
  prefixes: string[];
  nextMarker: string;
}

/** List Blobs' answer (`?restype=container&comp=list`), as Azure writes it. */
export function enumerationResultsXml(listing: BlobListing): string {
  const optional = (name: string, value: string | number | undefined) =>
    value === undefined || value === '' ? '' : `<${name}>${escapeXml(String(value))}</${name}>`;
  const blobs = listing.blobs
    .map(
      (blob) =>
        `<Blob><Name>${escapeXml(blob.name)}</Name><Properties>` +
        `<Creation-Time>${blob.modifiedAt.toUTCString()}</Creation-Time>` +
        `<Last-Modified>${blob.modifiedAt.toUTCString()}</Last-Modified>` +
        `<Etag>${escapeXml(blob.etag)}</Etag>` +
        `<Content-Length>${blob.size}</Content-Length>` +
        `<Content-Type>${escapeXml(blob.contentType)}</Content-Type>` +
        optional('Content-Encoding', blob.contentSettings.contentEncoding) +
        optional('Content-Language', blob.contentSettings.contentLanguage) +
        (blob.contentMd5 === null
          ? ''
          : `<Content-MD5>${escapeXml(blob.contentMd5)}</Content-MD5>`) +
        optional('Cache-Control', blob.contentSettings.cacheControl) +
        optional('Content-Disposition', blob.contentSettings.contentDisposition) +
        '<BlobType>BlockBlob</BlobType><LeaseStatus>unlocked</LeaseStatus>' +
        '<LeaseState>available</LeaseState><ServerEncrypted>true</ServerEncrypted>' +
        '<AccessTier>Hot</AccessTier><AccessTierInferred>true</AccessTierInferred>' +
        '</Properties>' +
        (blob.metadata === undefined ? '' : metadataXml(blob.metadata)) +
        '</Blob>',
    )
    .join('');
  const prefixes = listing.prefixes
    .map((name) => `<BlobPrefix><Name>${escapeXml(name)}</Name></BlobPrefix>`)
    .join('');
  return (
    `${XML_DECLARATION}<EnumerationResults ServiceEndpoint="${escapeXml(listing.serviceEndpoint)}" ` +
    `ContainerName="${escapeXml(listing.containerName)}">` +
    optional('Prefix', listing.prefix) +
    optional('Marker', listing.marker) +
    optional('MaxResults', listing.maxResults) +
    optional('Delimiter', listing.delimiter) +
    `<Blobs>${blobs}${prefixes}</Blobs>` +
    `<NextMarker>${escapeXml(listing.nextMarker)}</NextMarker>` +
    '</EnumerationResults>'
  );
}

/** One entry of a Put Block List body: where Azure would look the block up. */
export interface BlockListEntry {
  list: 'Latest' | 'Committed' | 'Uncommitted';
  blockId: string;
}

/**
 * The entries of a Put Block List body (`<BlockList><Latest>id</Latest>...</BlockList>`), in
 * order; null when the body is not that document.
 */
export function parseBlockList(xml: string): BlockListEntry[] | null {
  const body = xml
    .replace(/^\uFEFF/, '')
    .replace(/^\s*<\?xml[^?]*\?>/, '')
    .trim();
  const outer = /^<BlockList\s*>([\s\S]*)<\/BlockList>$/.exec(body);
  if (!outer) return /^<BlockList\s*\/>$/.test(body) ? [] : null;
  const entries: BlockListEntry[] = [];
  const entry = /\s*<(Latest|Committed|Uncommitted)>([^<]*)<\/\1>\s*/y;
  const inner = outer[1] as string;
  let at = 0;
  while (at < inner.length) {
    entry.lastIndex = at;
    const found = entry.exec(inner);
    if (!found) return inner.slice(at).trim() === '' ? entries : null;
    entries.push({
      list: found[1] as BlockListEntry['list'],
      blockId: unescapeXml((found[2] as string).trim()),
    });
    at = entry.lastIndex;
  }
  return entries;
}

/** A blob's metadata in a listing: `<Metadata><name>value</name>...</Metadata>`. */
function metadataXml(metadata: Readonly<Record<string, string>>): string {
  // Names are C# identifiers (actors/files/blob-metadata.ts), so they are element names as they are.
  const pairs = Object.entries(metadata)
    .map(([name, value]) => `<${name}>${escapeXml(value)}</${name}>`)
    .join('');
  return `<Metadata>${pairs}</Metadata>`;
}
