import { readFileSync } from 'node:fs';
import {
  commandTable,
  DOCUMENTS,
  DOWNLOADS,
  eventTable,
  mailReachability,
} from '../protocol/documents.ts';
import { SERVICE_VERSION } from '../protocol/version.ts';
import type { ServiceConfig } from '../actors/kernel/services.ts';

export interface ServedDocument {
  contentType: string;
  /** Text, or the bytes of a download as committed. */
  body: string | Buffer;
}

/**
 * The reference documents, read once at start-up with their placeholders filled in, and the
 * downloads (the pay script), read as they are: byte for byte.
 */
export function loadDocuments(
  config: ServiceConfig,
  found: { helpWorkspaceId: string },
): Map<string, ServedDocument> {
  const values: Record<string, string> = {
    help_workspace_id: found.helpWorkspaceId,
    base_url: config.baseUrl,
    terms_url: config.termsUrl,
    privacy_url: config.privacyUrl,
    operator_name: config.operatorName,
    // The email capability's settings name the sign-up address (actors/email/settings.ts).
    ...(config.mailJoinAddress !== undefined && {
      mail_join_address: config.mailJoinAddress,
      mail_reachability: mailReachability(config.mailJoinAddress),
    }),
    service_version: SERVICE_VERSION,
    event_table: eventTable(),
    command_table: commandTable(),
  };
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
