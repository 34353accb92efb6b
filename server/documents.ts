import { readFileSync } from 'node:fs';
import { CAPABILITIES } from '../actors/capabilities.ts';
import { commandTable, DOCUMENTS, DOWNLOADS, eventTable } from '../protocol/documents.ts';
import { SERVICE_VERSION } from '../protocol/version.ts';
import type { Services } from '../actors/kernel/services.ts';

export interface ServedDocument {
  contentType: string;
  /** Text, or the bytes of a download as committed. */
  body: string | Buffer;
}

/**
 * The reference documents, read once at start-up with their placeholders filled in, and the
 * downloads (the pay script), read as they are: byte for byte. The service's own values are
 * filled in here; the capabilities give theirs (`documentValues` in actors/kernel/capability.ts).
 */
export function loadDocuments(services: Services): Map<string, ServedDocument> {
  const { config } = services;
  const values: Record<string, string> = {
    base_url: config.baseUrl,
    terms_url: config.termsUrl,
    privacy_url: config.privacyUrl,
    operator_name: config.operatorName,
    service_version: SERVICE_VERSION,
    event_table: eventTable(),
    command_table: commandTable(),
  };
  for (const capability of CAPABILITIES)
    Object.assign(values, capability.documentValues?.(services));
  const served = new Map<string, ServedDocument>();
  for (const document of DOCUMENTS) {
    const text = readFileSync(
      new URL(`../protocol/documents/${document.file}`, import.meta.url),
      'utf8',
    );
    const body = text.replace(/\{([a-z_]+)\}/g, (whole, name: string) => values[name] ?? whole);
    served.set(document.path, { contentType: document.contentType, body });
  }
  for (const download of DOWNLOADS) {
    const body = readFileSync(new URL(`../protocol/documents/${download.file}`, import.meta.url));
    served.set(download.path, { contentType: download.contentType, body });
  }
  return served;
}
