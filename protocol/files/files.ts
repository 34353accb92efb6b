import { z } from 'zod';
import { dealReceiptSchema, fileReceiptSchema, paymentReceiptSchema } from '../receipts.ts';
import { defineOperation } from '../operation.ts';
import { FILE_PATH_PATTERN } from './path-pattern.ts';
import { MAX_PATH_BYTES } from './path.ts';
import { pageCursor, pageLimit } from '../paging.ts';

/** The date conditions a write takes over HTTP (protocol/conditional-dates.ts). */
const writeDateHeaders = {
  'if-unmodified-since':
    'An HTTP-date: act only if the file was not saved after it (its `Last-Modified`); else `412 precondition_failed` and nothing changes. Ignored with `If-Match`, on a path with no file, or when not an HTTP-date.',
  'if-modified-since':
    'An HTTP-date: act only if the file was saved after it; else `412 precondition_failed` and nothing changes. Ignored with `If-None-Match`, on a path with no file, or when not an HTTP-date.',
} as const;

/** The largest file one PUT takes; storage links take larger ones, up to the quota. */
export const MAX_FILE_BYTES = 100 * 1024 * 1024;

export const filePath = z
  .string()
  // The rules in the description's own terms (parseFilePath refuses, with `invalid_path`).
  .meta({ pattern: FILE_PATH_PATTERN.source, minLength: 1, maxLength: MAX_PATH_BYTES })
  .describe(
    'The file path inside the workspace: UTF-8 segments separated by `/`, at most 1,024 bytes once normalised to NFC. Names are compared by their NFC form, so two spellings of one name (`ü` composed or as `u` + U+0308) are one file, while `list_files` shows the spelling the file was last saved under; no leading `/`, no empty, `.` or `..` segment, no control or bidirectional characters, no backslash (`\\`) and no look-alike of `/` or `\\` (such as U+2215 or U+FF0F). In a URL it may be percent-encoded as a whole: `%2F` is `/`, and the rules hold for the decoded path. A bad path: `400 invalid_path`, whose `rule` names what to fix.',
  );

const receiptAnswer = z.object({ receipt: fileReceiptSchema }).meta({ id: 'ReceiptAnswer' });

const writeFile = defineOperation({
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
    'A `Content-MD5` header (base64 of the MD5 of the body) is checked against the bytes',
    'received: when it differs, `400 content_md5_mismatch` and nothing is saved. Every version',
    'keeps its MD5 (`read_file` answers it as `Content-MD5`).',
    'Over HTTP, `If-Unmodified-Since` (an HTTP-date, e.g. the `Last-Modified` you read) saves only',
    'if the file was not saved after it, `If-Modified-Since` only if it was: else',
    '`412 precondition_failed` and nothing is saved (checked with the save, to the second).',
  ].join(' '),
  input: z.strictObject({ workspace_id: z.uuid(), path: filePath }),
  output: receiptAnswer,
  // Saving a listing's file checks it as post_listing does (the store's save hook).
  errors: [
    'not_found',
    'forbidden',
    'quota_exceeded',
    'listing_invalid',
    'content_refused',
    'content_md5_mismatch',
    'precondition_failed',
  ],
  binding: {
    body: { kind: 'bytes', maxBytes: MAX_FILE_BYTES },
    requestHeaders: {
      'content-md5':
        'Base64 of the MD5 of the body: the save is refused (400 content_md5_mismatch) unless the bytes received have it.',
      ...writeDateHeaders,
    },
  },
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
    'Answers the bytes of the file at `path`, with `ETag` (its sha256), `Last-Modified` (when the',
    'version served was saved, an HTTP-date to the second), `If-None-Match` and',
    '`If-Modified-Since` (304), `If-Unmodified-Since` (412 `precondition_failed` when the version',
    'is newer), byte `Range` (206) and HEAD. `version` reads an older version of a markdown file with a YAML',
    'header (their bytes are kept); of other files only the newest version is kept.',
    "`Content-MD5` is base64 of the whole version's MD5 (also on a 206).",
    "`Content-Type` follows the path's extension: `.md` `text/markdown; charset=utf-8`; `.txt`,",
    '`.csv`, `.yaml`, `.yml`, `.html`, `.htm`, `.svg` `text/plain; charset=utf-8` (never served',
    'as a page); `.json` `application/json`; `.png`, `.jpg`/`.jpeg`, `.gif`, `.pdf` their image',
    'or PDF type; anything else `application/octet-stream`.',
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
  errors: ['not_found', 'precondition_failed'],
  binding: {
    reply: { kind: 'bytes', contentType: 'application/octet-stream' },
    // Judged by the door against the reply's `lastModified` (server/http/byte-reply.ts).
    requestHeaders: {
      'if-modified-since':
        'An HTTP-date: `304` with no body unless the version was saved after it. Ignored with `If-None-Match`, or when not an HTTP-date.',
      'if-unmodified-since':
        'An HTTP-date: `412 precondition_failed` if the version was saved after it. Ignored with `If-Match`, or when not an HTTP-date.',
    },
    replyHeaders: {
      'content-md5':
        "Base64 of the MD5 of the version's bytes (the whole version, also on a 206); absent for versions saved before MD5s were kept.",
    },
  },
  // By the path's extension (actors/files/content-type.ts); a test holds the two together.
  replyContentTypes: [
    'application/octet-stream',
    'text/markdown',
    'text/plain',
    'application/json',
    'image/png',
    'image/jpeg',
    'image/gif',
    'application/pdf',
  ],
});

const deleteFile = defineOperation({
  name: 'delete_file',
  method: 'DELETE',
  path: '/workspaces/:workspace_id/files/*path',
  auth: 'agent',
  status: 200,
  summary: 'Delete a file; answers the signed receipt of the deletion.',
  description: [
    'Deletes the file at `path` (a new version whose action is `delete`, with its receipt); every',
    'member gets a `file.deleted` change and its bytes stop counting against the storage of whoever',
    'saved it last. Over HTTP, `If-Unmodified-Since` and `If-Modified-Since` as for `write_file`',
    '(`412 precondition_failed`, nothing deleted).',
  ].join(' '),
  input: z.strictObject({ workspace_id: z.uuid(), path: filePath }),
  output: receiptAnswer,
  errors: ['not_found', 'forbidden', 'precondition_failed'],
  binding: { requestHeaders: writeDateHeaders },
});

const listFiles = defineOperation({
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
    prefix: z
      .string()
      .max(1024)
      .optional()
      .describe('Only paths that start with this (compared in NFC, as paths are).'),
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

const listReceipts = defineOperation({
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
      receipts: z.array(z.union([fileReceiptSchema, dealReceiptSchema, paymentReceiptSchema])),
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

export type { DealReceipt } from '../receipts.ts';
