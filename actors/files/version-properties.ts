import type { ByteReply } from '../../protocol/binding.ts';
import { readVersionProperties, type VersionProperties } from '../../storage/files/files.ts';
import type { Services } from '../kernel/services.ts';

export type { ContentSettings, VersionProperties } from '../../storage/files/files.ts';

/**
 * A version's bytes as read_file answers them, with what Azure clients keep beside them (the
 * storage-link door answers all of it as headers; the REST door answers `Content-MD5`).
 */
export interface FileBytes extends ByteReply, VersionProperties {}

/**
 * The MD5, metadata and content settings of listed versions (List Blobs answers them beside
 * list_files' page), in one round trip; a version not found (saved before they were kept) has
 * none. Versions are named by their NFC key (protocol/files/path.ts parseFilePath).
 */
export async function versionProperties(
  services: Services,
  workspaceId: string,
  versions: readonly { path: string; version: number }[],
): Promise<(path: string, version: number) => VersionProperties> {
  const found = await readVersionProperties(services.db(), workspaceId, versions);
  return (path, version) =>
    found.get(`${version}:${path}`) ?? { contentMd5: null, metadata: {}, contentSettings: {} };
}
