import { LinkRefused } from './storage-links.ts';

/**
 * Blob metadata: the `x-ms-meta-<name>: value` pairs Azure Blob clients send with a save and
 * read back with the blob (rclone keeps its modification time there, and skips a file whose
 * size, time and MD5 match). Kept with each version (storage/migrations/019), within Azure's
 * bounds: names are C# identifiers, names and values together at most 8 KiB. Both HTTP engines
 * fold header names to lower case, so names are kept (and answered) in lower case.
 */

const METADATA_PREFIX = 'x-ms-meta-';
const MAX_METADATA_BYTES = 8 * 1024;

/** A C# identifier, as Azure requires of a metadata name. */
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The metadata a request's headers carry ({} for none); refuses, as Azure does, a name that is
 * not a C# identifier (400 InvalidMetadata) and more than 8 KiB in all (400 MetadataTooLarge).
 */
export function metadataFromHeaders(
  headers: Readonly<Record<string, string>>,
): Record<string, string> {
  const metadata: Record<string, string> = {};
  let bytes = 0;
  for (const [header, value] of Object.entries(headers)) {
    if (!header.startsWith(METADATA_PREFIX)) continue;
    const name = header.slice(METADATA_PREFIX.length);
    if (!NAME.test(name)) {
      throw new LinkRefused(
        400,
        'InvalidMetadata',
        `The metadata specified is invalid. It has characters that are not permitted: ${JSON.stringify(name.slice(0, 64))} is not a C# identifier (a letter or _, then letters, digits or _).`,
      );
    }
    bytes += Buffer.byteLength(name) + Buffer.byteLength(value);
    if (bytes > MAX_METADATA_BYTES) {
      throw new LinkRefused(
        400,
        'MetadataTooLarge',
        `The size of the specified metadata exceeds the maximum size permitted: names and values may take ${MAX_METADATA_BYTES} bytes in all.`,
      );
    }
    metadata[name] = value;
  }
  return metadata;
}

/** Metadata as response headers. */
export function metadataHeaders(
  metadata: Readonly<Record<string, string>>,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(metadata))
    headers[`${METADATA_PREFIX}${name}`] = value;
  return headers;
}
