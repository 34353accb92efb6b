/**
 * Opens the blob store the configuration names: S3 when `S3_URL` is set, else the filesystem
 * under `DATA_DIR/blobs`.
 */
import { join } from 'node:path';
import type { BlobStore } from './blob-store.ts';
import { openFilesystemBlobStore } from './filesystem-store.ts';
import { openS3BlobStore } from './s3-store.ts';

export type { BlobStore };

export async function openBlobStore(options: {
  dataDir: string;
  s3Url?: string | undefined;
}): Promise<BlobStore> {
  return options.s3Url
    ? openS3BlobStore({ s3Url: options.s3Url, stagingDir: join(options.dataDir, 'blob-staging') })
    : openFilesystemBlobStore({ root: join(options.dataDir, 'blobs') });
}
