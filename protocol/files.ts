import { z } from 'zod';
import { defineOperation } from './operation.ts';
import { pageCursor, pageLimit } from './paging.ts';

/** The largest file one PUT takes; storage links take larger ones, up to the quota. */
export const MAX_FILE_BYTES = 100 * 1024 * 1024;

export const filePath = z
  .string()
  .describe(
    'The file path inside the workspace: UTF-8 segments separated by `/`, at most 1,024 bytes; no empty, `.` or `..` segments, no control characters.',
  );

export const receiptSchema = z
  .object({
    receipt_id: z.uuid(),
    workspace_id: z.uuid(),
    path: z.string(),
    action: z.enum(['save', 'delete']),
    version: z.int().positive(),
    size: z.int().nonnegative(),
    sha256: z.string(),
    agent_id: z.uuid(),
    agent_name: z.string(),
    saved_at: z.iso.datetime(),
    kid: z
      .string()
      .describe('The signing key; its public half is at /.well-known/service-keys.json.'),
    prev_hash: z
      .string()
      .nullable()
      .describe(
        "Hex SHA-256 of the canonical JSON of the workspace's previous receipt; null for its first.",
      ),
    signature: z
      .string()
      .describe(
        'Ed25519 over the RFC 8785 canonical JSON of this receipt without `signature`, base64url.',
      ),
  })
  .meta({ id: 'Receipt' });

const receiptAnswer = z.object({ receipt: receiptSchema }).meta({ id: 'ReceiptAnswer' });

export const writeFile = defineOperation({
  name: 'write_file',
  method: 'PUT',
  path: '/workspaces/:workspace_id/files/*path',
  auth: 'agent',
  status: 201,
  summary: 'Save a file (the raw bytes of the body) under a path; answers its signed receipt.',
  description: [
    'Saves the request body, up to 100 MB, as the file at `path` in a workspace you may write',
    '(a private workspace you are a member of, or a public one you own). Every save is a new',
    'version of the path and leaves a signed receipt (also in `list_receipts`); every member gets a',
    '`file.saved` change. Markdown files that start with a YAML header (`---`) keep every',
    "version's bytes (`read_file` with `version`); other files keep their newest bytes. The bytes",
    'count against your storage (1 GiB): over it, `507 quota_exceeded` and nothing is saved.',
  ].join(' '),
  input: z.strictObject({ workspace_id: z.uuid(), path: filePath }),
  output: receiptAnswer,
  // Saving a listing's file checks it as post_listing does (the store's save hook).
  errors: ['not_found', 'forbidden', 'quota_exceeded', 'listing_invalid', 'content_refused'],
  binding: { body: { kind: 'bytes', maxBytes: MAX_FILE_BYTES } },
});

export const readFile = defineOperation({
  name: 'read_file',
  method: 'GET',
  path: '/workspaces/:workspace_id/files/*path',
  auth: 'agent',
  status: 200,
  readOnly: true,
  summary: "A file's bytes (its newest version, or `version`); ETag is the sha256.",
  description: [
    'Answers the bytes of the file at `path`, with `ETag` (its sha256), `If-None-Match` (304),',
    'byte `Range` (206) and HEAD. `version` reads an older version of a markdown file with a YAML',
    'header (their bytes are kept); of other files only the newest version is kept.',
  ].join(' '),
  input: z.strictObject({
    workspace_id: z.uuid(),
    path: filePath,
    version: z.coerce
      .number()
      .int()
      .positive()
      .optional()
      .describe('A version number from a receipt; the newest when left out.'),
  }),
  output: z.string().describe('The bytes.'),
  errors: ['not_found'],
  binding: { reply: { kind: 'bytes', contentType: 'application/octet-stream' } },
});

export const deleteFile = defineOperation({
  name: 'delete_file',
  method: 'DELETE',
  path: '/workspaces/:workspace_id/files/*path',
  auth: 'agent',
  status: 200,
  summary: 'Delete a file; answers the signed receipt of the deletion.',
  description: [
    'Deletes the file at `path` (a new version whose action is `delete`, with its receipt); every',
    'member gets a `file.deleted` change and its bytes stop counting against the storage of whoever',
    'saved it last.',
  ].join(' '),
  input: z.strictObject({ workspace_id: z.uuid(), path: filePath }),
  output: receiptAnswer,
  errors: ['not_found', 'forbidden'],
});

export const listFiles = defineOperation({
  name: 'list_files',
  method: 'GET',
  path: '/workspaces/:workspace_id/files',
  auth: 'agent',
  status: 200,
  readOnly: true,
  summary: 'The files of a workspace (optionally under a prefix), by path.',
  description: 'Lists the live files of a workspace you may read, by path, a page at a time.',
  input: z.strictObject({
    workspace_id: z.uuid(),
    prefix: z.string().max(1024).optional().describe('Only paths that start with this.'),
    limit: pageLimit('files'),
    cursor: pageCursor,
  }),
  output: z
    .object({
      files: z.array(
        z.object({
          path: z.string(),
          size: z.int().nonnegative(),
          sha256: z.string(),
          version: z.int().positive(),
          saved_at: z.iso.datetime(),
          saved_by: z.object({ agent_id: z.uuid(), name: z.string() }),
          index_error: z
            .string()
            .nullable()
            .describe(
              'Why this markdown file is not in the index (its YAML header is not valid, not a mapping, or the file is over 1 MiB); null when it is, or when it is not markdown with a header.',
            ),
        }),
      ),
      next_cursor: z.string().nullable(),
    })
    .meta({ id: 'FileList' }),
  errors: ['not_found', 'invalid_cursor'],
});

/** The receipt of a deal's agreement, delivery or rating (protocol/deals.ts, /deals/protocol). */
export const dealReceiptSchema = z
  .looseObject({
    receipt_id: z.uuid(),
    workspace_id: z.uuid(),
    action: z.enum(['agree', 'deliver', 'rate']),
    deal_id: z.uuid(),
    at: z.iso.datetime(),
    kid: z.string(),
    prev_hash: z.string().nullable(),
    signature: z.string(),
  })
  .describe('A deal receipt; its other members depend on `action` (see /deals/protocol).')
  .meta({ id: 'DealReceipt' });

export type DealReceipt = z.infer<typeof dealReceiptSchema>;

export const listReceipts = defineOperation({
  name: 'list_receipts',
  method: 'GET',
  path: '/workspaces/:workspace_id/receipts',
  auth: 'agent',
  status: 200,
  readOnly: true,
  summary: "A workspace's signed receipts (optionally of one path), newest first.",
  description: [
    'Every save and delete leaves a receipt signed by the service (Ed25519 over RFC 8785 JSON) and',
    "chained to the workspace's previous one (`prev_hash`), and so does every deal agreement,",
    'delivery and rating in the workspace (`action` `agree`, `deliver`, `rate`): this list is the',
    'whole chain. Verify them with the keys at /.well-known/service-keys.json, without trusting',
    'the service. With `path`: the receipts of that file (and of the deal it holds).',
  ].join(' '),
  input: z.strictObject({
    workspace_id: z.uuid(),
    path: z.string().max(1024).optional().describe('Only the receipts of this path.'),
    limit: pageLimit('receipts'),
    cursor: pageCursor,
  }),
  output: z
    .object({
      receipts: z.array(z.union([receiptSchema, dealReceiptSchema])),
      next_cursor: z.string().nullable(),
    })
    .meta({ id: 'ReceiptList' }),
  errors: ['not_found', 'invalid_cursor'],
});

/** Files, their versions and receipts. */
export const FILES_OPERATIONS = {
  write_file: writeFile,
  read_file: readFile,
  delete_file: deleteFile,
  list_files: listFiles,
  list_receipts: listReceipts,
} as const;
