import { z } from 'zod';
import { defineOperation } from '../operation.ts';
import { FILE_PATH_PATTERN } from './path-pattern.ts';

/** How long a storage link works (protocol/documents/protocol.md, get_storage_link). */
export const STORAGE_LINK_LIFETIME_MS = 10 * 60 * 1000;

/**
 * Where storage links point: `<base_url>/blob/<workspace_id>` is a workspace as an Azure
 * container, `<container_url>/<path>` one file as a blob. Clients that parse an IP host's URL
 * account-style (the Azure SDKs do) read `blob` as the account and the workspace id as the
 * container.
 */
export const STORAGE_LINK_PREFIX = '/blob';

/** The Azure Storage REST version the links speak (`sv`, and `x-ms-version` on answers). */
export const AZURE_STORAGE_VERSION = '2025-11-05';

/** The most one Put Block takes; a whole blob (Put Blob or Put Block List) takes the quota. */
export const MAX_BLOCK_BYTES = 100 * 1024 * 1024;

/** How long a staged, uncommitted block is kept for a Put Block List to name it. */
export const STAGED_BLOCK_LIFETIME_MS = 60 * 60 * 1000;

const getStorageLink = defineOperation({
  name: 'get_storage_link',
  method: 'POST',
  path: '/workspaces/:workspace_id/sas',
  auth: 'agent',
  // A `read` token may ask for a `read` link; the handler refuses it `readwrite`.
  readScope: 'handler',
  mintsSecret: true,
  status: 200,
  summary:
    'A signed, Azure-SAS-shaped link to read or write files directly, any size, for 10 minutes.',
  description: [
    'A storage link lets any Azure Blob client (the Azure SDKs, azcopy, curl) read or write the',
    "workspace's files without your API token, for 10 minutes, with no 100 MB cap: a file saved",
    'through a link is saved under your name, with a receipt, counted against your storage (1 GiB).',
    '`access: "readwrite"` with `path`: answers `file_url`; upload with',
    '`curl -X PUT -H "x-ms-blob-type: BlockBlob" --data-binary @file "<file_url>"`, or the SDK',
    '(`new BlockBlobClient(file_url).uploadFile(...)`, which stages blocks past 256 MB).',
    '`access: "read"`, or `readwrite` without `path`: answers `container_url` and `sas_token`;',
    'a file is `<container_url>/<path>?<sas_token>` (GET, HEAD, byte ranges), and',
    '`<container_url>?<sas_token>&restype=container&comp=list` lists the files as Azure XML',
    '(`new ContainerClient(container_url + "?" + sas_token)`). `read` with `path` also answers',
    "that file's `file_url`. Reading needs read access to the workspace; writing needs write",
    'access, and a token with the `read` scope may ask only `access: "read"` (`403 token_scope`).',
    "The link's own refusals come as Azure XML errors (`403 AuthenticationFailed` for a tampered or",
    'expired link, `403 AuthorizationPermissionMismatch` for a read link used to write). An',
    'upload that starts before the link expires may finish.',
  ].join(' '),
  input: z.strictObject({
    workspace_id: z.uuid(),
    access: z
      .enum(['read', 'readwrite'])
      .describe('`read`: read and list files. `readwrite`: also create and replace them.'),
    path: z
      .string()
      .max(1024)
      // The file-path rules in the description's terms (parseFilePath refuses: `invalid_path`).
      .meta({ pattern: FILE_PATH_PATTERN.source, minLength: 1 })
      .optional()
      .describe('One file the link is for (readwrite: required for `file_url`).'),
  }),
  output: z
    .object({
      access: z.enum(['read', 'readwrite']),
      file_url: z
        .url()
        .optional()
        .describe(
          'The link to one file, its SAS query included (readwrite with path; read with path).',
        ),
      container_url: z
        .url()
        .optional()
        .describe('The workspace as an Azure container; add `/<path>?<sas_token>` for a file.'),
      sas_token: z
        .string()
        .optional()
        .describe(
          'The SAS query (no leading `?`): `sv`, `sr` (c: whole workspace, b: one file), `sp` (r, or rcw), `st`, `se`, `saoid` (you), `sig`.',
        ),
      expires_at: z.iso.datetime().describe('When the link stops working (10 minutes from now).'),
    })
    .meta({ id: 'StorageLink' }),
  errors: ['not_found', 'forbidden', 'invalid_path'],
});

/** Storage links (the Azure Blob door). */
export const STORAGE_LINKS_OPERATIONS = {
  get_storage_link: getStorageLink,
} as const;
