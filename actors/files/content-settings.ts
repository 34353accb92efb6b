import {
  CONTENT_SETTINGS,
  type ContentSettings,
  type VersionProperties,
} from '../../storage/files/files.ts';
import { contentTypeOf } from './content-type.ts';

/**
 * Content settings: the headers an Azure Blob client sets on a blob with Put Blob or Put Block
 * List (`x-ms-blob-content-type`, `-encoding`, `-language`, `-disposition`, `-cache-control`),
 * kept with the version as sent and answered as the plain HTTP headers on Get Blob, Get Blob
 * Properties and List Blobs, as Azure does. Only the `x-ms-blob-*` headers set them: a request's
 * own `Content-Type` describes the request (the SDKs send `application/octet-stream` by rote),
 * so a save that names no type has its type inferred from the path when read.
 */

/** Each setting's request header, and the header it is answered as. */
export const CONTENT_SETTING_HEADERS: Readonly<
  Record<keyof ContentSettings, { sent: string; answered: string }>
> = {
  contentType: { sent: 'x-ms-blob-content-type', answered: 'content-type' },
  contentEncoding: { sent: 'x-ms-blob-content-encoding', answered: 'content-encoding' },
  contentLanguage: { sent: 'x-ms-blob-content-language', answered: 'content-language' },
  contentDisposition: { sent: 'x-ms-blob-content-disposition', answered: 'content-disposition' },
  cacheControl: { sent: 'x-ms-blob-cache-control', answered: 'cache-control' },
};

/** The settings a request's headers carry ({} for none; an empty value sets nothing). */
export function contentSettingsFromHeaders(
  headers: Readonly<Record<string, string>>,
): ContentSettings {
  const settings: ContentSettings = {};
  for (const name of CONTENT_SETTINGS) {
    const value = headers[CONTENT_SETTING_HEADERS[name].sent]?.trim();
    if (value) settings[name] = value;
  }
  return settings;
}

/** The type a version is served with: the one its save named, else the path's. */
export function servedContentType(path: string, settings: ContentSettings): string {
  return settings.contentType ?? contentTypeOf(path);
}

/** The settings as response headers, the type included (inferred when none was set). */
export function contentSettingHeaders(
  path: string,
  properties: Pick<VersionProperties, 'contentSettings'>,
): Record<string, string> {
  const settings = properties.contentSettings;
  const headers: Record<string, string> = {
    'content-type': servedContentType(path, settings),
  };
  for (const name of CONTENT_SETTINGS) {
    const value = settings[name];
    if (value !== undefined) headers[CONTENT_SETTING_HEADERS[name].answered] = value;
  }
  return headers;
}
