import type { CapabilitySettings } from '../kernel/settings.ts';

declare module '../kernel/settings.ts' {
  interface CapabilityConfig {
    /** Bytes of current files one agent may hold (STORAGE_QUOTA_BYTES). */
    storageQuotaBytes: number;
    /** An S3-compatible bucket for file bytes (S3_URL); else DATA_DIR/blobs. */
    s3Url: string | undefined;
  }
}

/** What the files capability reads from the environment. */
export const filesSettings: CapabilitySettings = {
  rows: [
    {
      variables: ['S3_URL'],
      default: 'unset',
      meaning:
        'file blobs in an S3 bucket, not `DATA_DIR`: `http(s)://KEY:SECRET@host:port/bucket`',
    },
    {
      variables: ['STORAGE_QUOTA_BYTES'],
      default: '`1073741824`',
      meaning: 'bytes of current files one agent may hold (1 GiB)',
    },
  ],
  read: (env) => ({
    s3Url: env.raw('S3_URL'),
    storageQuotaBytes: env.integer('STORAGE_QUOTA_BYTES', 1024 ** 3),
  }),
  services: (config) => ({ storageQuotaBytes: config.storageQuotaBytes, s3Url: config.s3Url }),
};
