/**
 * Opens the blob store the configuration names: S3 when `S3_URL` is set, else the filesystem
 * under `DATA_DIR/blobs`.
 */
import { join } from 'node:path';
import type { BlobStore } from './blob-store.ts';
import { openFilesystemBlobStore } from './filesystem-store.ts';

export type { BlobStore };

export async function openBlobStore(options: {
  dataDir: string;
  s3Url?: string | undefined;
}): Promise<BlobStore> {
  if (!options.s3Url) return openFilesystemBlobStore({ root: join(options.dataDir, 'blobs') });
  // s3-store.ts brings minio (~27 MB of RSS): loaded only when S3_URL names a bucket.
  const { openS3BlobStore } = await import('./s3-store.ts');
  return openS3BlobStore({
    s3Url: options.s3Url,
    stagingDir: join(options.dataDir, 'blob-staging'),
  });
}
