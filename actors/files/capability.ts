import { FILE_RECEIPTS_SQL } from '../../storage/files/file-receipts.ts';
import { openBlobStore } from '../../storage/blobs/open.ts';
import { BlobDiscards } from './blob-discards.ts';
import { checkBlobStoreIdentity } from './blob-store-identity.ts';
import type { BlobStore } from '../../storage/blobs/blob-store.ts';
import type { Capability } from '../kernel/capability.ts';
import { SigningKeys } from '../receipts/signing-keys.ts';
import { collectUnusedBlobs } from './blob-collector.ts';
import { deleteFile, listFiles, listReceipts, readFile, writeFile } from './handlers.ts';
import { expireStagedBlocks } from './staged-blocks.ts';
import { getStorageLink } from './storage-link-handlers.ts';
import { StorageLinks } from './storage-links.ts';
import { filesSettings } from './settings.ts';
import { accountStorage } from './account-storage.ts';

/** What files need: where bytes live, what signs receipts, what signs storage links. */
interface FileServices {
  blobs: BlobStore;
  signingKeys: SigningKeys;
  /** Signs and checks storage links. */
  links: StorageLinks;
  /** Let-go bytes being deleted after their answer (./blob-discards.ts). */
  discards: BlobDiscards;
}

declare module '../kernel/services.ts' {
  interface ServiceConfig {
    /** Bytes one agent may hold, every kept byte counted (STORAGE_QUOTA_BYTES; quota.ts). */
    storageQuotaBytes?: number;
    s3Url?: string | undefined;
  }
  interface Services {
    /** Provided by the files capability's start-up step, before any request. */
    readonly files: FileServices;
  }
}

/** Files: versions with signed receipts, the blob store, storage links and their blocks. */
export const files = {
  name: 'files',
  settings: filesSettings,
  handlers: {
    write_file: writeFile,
    read_file: readFile,
    delete_file: deleteFile,
    list_files: listFiles,
    list_receipts: listReceipts,
    get_storage_link: getStorageLink,
  },
  accountSections: [accountStorage],
  jobs: [
    {
      // Staged blocks past their time are dropped (a commit ignores them at once).
      name: 'blocks.expire',
      schedule: '*/10 * * * *',
      purpose: 'when staged blocks past their time are dropped',
      run: async (services, now) => void (await expireStagedBlocks(services, now)),
    },
    {
      // Blobs no version or staged block uses are collected; at half past, away from the
      // hourly sweeps on the hour. Blob ages are the store's own times (file mtime, S3
      // Last-Modified): wall-clock time, whatever clock the service runs on.
      name: 'blobs.collect',
      schedule: '30 * * * *',
      purpose: 'when blobs no version or staged block uses are collected',
      run: async (services) => void (await collectUnusedBlobs(services, new Date())),
    },
  ],
  async startUp(services) {
    services.receiptSources.add('files', FILE_RECEIPTS_SQL);
    const { config } = services;
    const signingKeys = new SigningKeys({ secret: config.receiptKeySecret, clock: services.clock });
    await signingKeys.start(services.driver);
    const blobs = await openBlobStore({ dataDir: config.dataDir ?? './data', s3Url: config.s3Url });
    // A process on another store than the database's refuses to start (blob-store-identity.ts).
    await checkBlobStoreIdentity(
      services.driver,
      blobs,
      config.s3Url ? 'the S3_URL bucket' : `${config.dataDir ?? './data'}/blobs`,
    );
    services.provide('files', {
      blobs,
      signingKeys,
      links: await StorageLinks.start(services.driver),
      discards: new BlobDiscards(),
    });
  },
  async shutDown(services) {
    // Their transactions need the database, which closes after this step.
    await services.files.discards.settled();
  },
} satisfies Capability;
