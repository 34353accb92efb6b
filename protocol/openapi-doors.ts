import {
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { DOCUMENTS } from './documents.ts';
import { readFile } from './files/files.ts';
import { FILE_PATH_PATTERN } from './files/path-pattern.ts';
import { MAX_PATH_BYTES } from './files/path.ts';
import type { JsonSchema } from './json-schema.ts';
import {
  AZURE_STORAGE_VERSION,
  MAX_BLOCK_BYTES,
  STORAGE_LINK_PREFIX,
} from './files/storage-links.ts';

/**
 * The OpenAPI path items of what the service answers besides its operations (those are
 * generated from the table in ./openapi.ts): /health, the reference documents and
 * /openapi.json itself, the MCP endpoint and the storage-link door (Azure's Blob API). Each says
 * what server/app.ts and the door it names really answer.
 */

type PathItem = Record<string, unknown>;

const PROBLEM_JSON = {
  'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
};

function header(description: string, schema: JsonSchema = { type: 'string' }) {
  return { description, schema };
}

const RETRY_AFTER = header('Seconds to wait before asking again.', { type: 'integer' });

/** server/app.ts: `health()`, from server/health-probe.ts. */
/** /health shows where the SMTP door listens (SMTP_PORT=0 picks a port). */
const SMTP_PORT = {
  type: 'integer',
  description:
    'The port of the SMTP door (the email-only interface); absent when this process runs none (SMTP_PORT=off).',
} as const;

const health: PathItem = {
  get: {
    operationId: 'health',
    summary: 'Whether the service takes requests and its database answers.',
    description:
      'Answers within 100 ms whatever runs: from a background probe of the database (one a second). `200` while the database answered recently; `503` with `"database": "unreachable"` (and `Retry-After`) while it does not, so a load balancer stops sending traffic; the service reconnects by itself. While the service starts or stops it answers `503 service_unavailable` as a problem. Not rate-limited.',
    security: [],
    responses: {
      200: {
        description: 'The service is up and its database answers.',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['status', 'service_version'],
              properties: {
                status: { const: 'ok' },
                service_version: { type: 'string' },
                smtp_port: SMTP_PORT,
              },
              additionalProperties: false,
            },
          },
        },
      },
      503: {
        description:
          'The database has not answered a probe recently (`degraded`), or the service is starting or stopping (a `service_unavailable` problem).',
        headers: { 'retry-after': RETRY_AFTER },
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['status', 'database', 'service_version'],
              properties: {
                status: { const: 'degraded' },
                database: { const: 'unreachable' },
                service_version: { type: 'string' },
                smtp_port: SMTP_PORT,
              },
              additionalProperties: false,
            },
          },
          ...PROBLEM_JSON,
        },
      },
    },
  },
};

function documentItem(path: string, summary: string, contentType: string): PathItem {
  return {
    get: {
      operationId: `document${path.replace(/[^a-z]+/g, '_')}`,
      summary,
      security: [],
      responses: {
        200: {
          description: summary,
          content: { [contentType.split(';')[0] as string]: { schema: { type: 'string' } } },
        },
      },
    },
  };
}

const openApiItem: PathItem = {
  get: {
    operationId: 'document_openapi_json',
    summary: 'This document: the OpenAPI 3.1 description of the HTTP interface.',
    security: [],
    responses: {
      200: {
        description: 'An OpenAPI 3.1 document (a JSON object).',
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['openapi', 'info', 'paths'],
              properties: {
                openapi: { type: 'string' },
                info: { type: 'object' },
                servers: { type: 'array', items: { type: 'object' } },
                paths: { type: 'object' },
                components: { type: 'object' },
              },
            },
          },
        },
      },
    },
  },
};

/** server/mcp/door.ts: stateless Streamable HTTP, JSON answers. */
const JSON_RPC_MESSAGE: JsonSchema = {
  type: 'object',
  required: ['jsonrpc'],
  properties: {
    jsonrpc: { const: '2.0' },
    // JSON-RPC answers a request whose id could not be read with `"id": null`, and a refused
    // message with the id it sent, a number the SDK's schema refuses (2.5) included.
    id: { type: ['string', 'number', 'null'] },
    method: { type: 'string' },
    params: { type: 'object' },
    result: { type: 'object' },
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'integer' }, message: { type: 'string' }, data: {} },
    },
  },
};
/**
 * A message the door takes (server/mcp/json-rpc.ts checks each with the MCP SDK's own schema):
 * that schema itself, so that the description refuses what the door refuses (a request with a
 * `result`, a message without `method` or `result`/`error`).
 */
const JSON_RPC_SENT_MESSAGE: JsonSchema = (() => {
  const schema = z.toJSONSchema(JSONRPCMessageSchema, { io: 'input', unrepresentable: 'any' });
  delete schema.$schema;
  return schema as JsonSchema;
})();
const jsonRpcBody = (message: string): JsonSchema => ({
  oneOf: [
    { $ref: `#/components/schemas/${message}` },
    {
      type: 'array',
      minItems: 1,
      maxItems: 100,
      items: { $ref: `#/components/schemas/${message}` },
    },
  ],
});
const JSON_RPC_REFUSAL = {
  'application/json': { schema: { $ref: '#/components/schemas/JsonRpcMessage' } },
};
const MCP_SESSION_ID = {
  name: 'mcp-session-id',
  in: 'header',
  required: false,
  description:
    'Not needed: this endpoint is stateless, so it issues no `Mcp-Session-Id` and ignores one sent (every POST stands alone).',
  schema: { type: 'string' },
};
function mcpNoStream(method: string) {
  return {
    operationId: `mcp_${method}`,
    summary: `No event stream and no session: ${method.toUpperCase()} /mcp answers 405.`,
    security: [],
    parameters: [MCP_SESSION_ID],
    responses: {
      405: {
        description:
          'The endpoint is stateless and answers JSON: it offers no standalone event stream (GET) and has no session to end (DELETE). `Allow` names POST.',
        headers: { allow: header('`POST, OPTIONS`.') },
        content: JSON_RPC_REFUSAL,
      },
    },
  };
}
const mcp: PathItem = {
  summary: 'MCP (Model Context Protocol) over Streamable HTTP.',
  description:
    'Every operation of this document is also an MCP tool with the same JSON input (`tools/list`). The endpoint is stateless and answers JSON: no sessions, no event stream. Send the token as `Authorization: Bearer`, or as the `api_token` argument of a tool call.',
  post: {
    operationId: 'mcp',
    summary: 'One JSON-RPC 2.0 message of MCP, or a batch of at most 100.',
    description:
      "`Accept` must allow `application/json` (`text/event-stream` may be listed too; answers are JSON). A failing tool answers `isError: true` with the problem object as text; an unknown tool or malformed `params` is JSON-RPC error `-32602`; each message of a batch counts against the rate limits as one request (those past it: JSON-RPC error `-32000` with the `rate_limited` problem as `data`). Refusals before any JSON-RPC is read (a foreign `Origin`, a body too large, bad JSON) are a JSON-RPC error whose `data` is the problem object, with the problem's HTTP status.",
    security: [{}, { bearer: [] }],
    parameters: [
      {
        name: 'mcp-protocol-version',
        in: 'header',
        required: false,
        description:
          'The MCP protocol version the client speaks, after `initialize`; one the server does not know is refused with 400.',
        // The versions the MCP SDK's transport takes (it refuses any other, an empty one too).
        schema: { type: 'string', enum: [...SUPPORTED_PROTOCOL_VERSIONS] },
      },
      MCP_SESSION_ID,
    ],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: jsonRpcBody('JsonRpcSentMessage') } },
    },
    responses: {
      200: {
        description: 'The JSON-RPC response, or the batch of responses.',
        content: { 'application/json': { schema: jsonRpcBody('JsonRpcMessage') } },
      },
      202: {
        description: 'The body held only notifications or responses: accepted, nothing to answer.',
      },
      400: {
        description: 'Not JSON-RPC, a batch of more than 100, or an unknown protocol version.',
        content: JSON_RPC_REFUSAL,
      },
      403: {
        description: 'A browser `Origin` this service does not admit.',
        content: JSON_RPC_REFUSAL,
      },
      406: {
        description: '`Accept` allows neither `application/json` nor `text/event-stream`.',
        content: JSON_RPC_REFUSAL,
      },
      413: { description: 'A body larger than the largest tool takes.', content: JSON_RPC_REFUSAL },
      415: { description: 'The body is not `application/json`.', content: JSON_RPC_REFUSAL },
      429: {
        description: 'Past the per-address rate limit.',
        headers: { 'retry-after': RETRY_AFTER },
        content: JSON_RPC_REFUSAL,
      },
      503: {
        description: 'The service is starting or stopping.',
        headers: { 'retry-after': RETRY_AFTER },
        content: JSON_RPC_REFUSAL,
      },
    },
  },
  get: mcpNoStream('get'),
  delete: mcpNoStream('delete'),
};

// ---------------------------------------------------------------------------------------------
// Storage links: server/storage-link/door.ts, Azure's Blob API for the service's own links.

function query(name: string, description: string, required = false, schema?: JsonSchema) {
  return { name, in: 'query', required, description, schema: schema ?? { type: 'string' } };
}
function requestHeader(name: string, description: string) {
  return { name, in: 'header', required: false, description, schema: { type: 'string' } };
}

/** The SAS query of a storage link (actors/files/storage-links.ts), as get_storage_link gives it. */
const SAS_QUERY = [
  query('sv', `The Azure Storage version the link speaks (\`${AZURE_STORAGE_VERSION}\`).`, true),
  query('sr', 'The signed resource: `c` the workspace, `b` one file.', true, {
    type: 'string',
    enum: ['c', 'b'],
  }),
  query('sp', 'The permissions: `r`, or `rcw`.', true),
  query('st', 'Signed start time, ISO 8601 to the second.'),
  query(
    'se',
    'Signed expiry time, ISO 8601 to the second (10 minutes after the link was made).',
    true,
  ),
  query('saoid', 'The agent the link acts for.', true),
  query(
    'si',
    'The API token that made the link (its id): the link stops when that token is revoked or expires. Absent from links made by mail.',
  ),
  query('sig', 'The signature (HMAC-SHA256, base64url) over the fields, workspace and file.', true),
];
const WORKSPACE_ID = {
  name: 'workspace_id',
  in: 'path',
  required: true,
  description: 'The workspace, as an Azure container.',
  schema: { type: 'string', format: 'uuid' },
};
const BLOB_PATH = {
  name: 'path',
  in: 'path',
  required: true,
  description:
    'The file path (the blob name): one or more segments separated by `/`, each percent-encoded on its own; held to the file-path rules of the operations (no empty, `.` or `..` segment, no control character...), or refused with `InvalidResourceName`.',
  schema: {
    type: 'string',
    pattern: FILE_PATH_PATTERN.source,
    minLength: 1,
    maxLength: MAX_PATH_BYTES,
  },
};
const AZURE_HEADERS = {
  'x-ms-request-id': header('This answer, for support.'),
  'x-ms-version': header(`\`${AZURE_STORAGE_VERSION}\`.`),
};
const AZURE_ERROR = {
  description:
    "Azure's XML `<Error><Code>…</Code><Message>…</Message></Error>`; the code also in `x-ms-error-code`: `AuthenticationFailed` (a tampered, foreign or expired link), `AuthorizationPermissionMismatch` (a read link used to write, or no access to the workspace), `ContainerNotFound`, `BlobNotFound`, `InvalidResourceName`, `MissingRequiredHeader`, `InvalidHeaderValue`, `InvalidBlockList`, `InvalidXmlDocument`, `Md5Mismatch`, `InvalidMetadata`, `MetadataTooLarge`, `BlobAlreadyExists` / `ConditionNotMet` (conditional writes), `InvalidRange`, `RequestBodyTooLarge`, `QuotaExceeded`, `FeatureNotSupported` (a call links do not take, copies from a URL), `ServerBusy`.",
  headers: { 'x-ms-error-code': header("Azure's error code."), ...AZURE_HEADERS },
  content: { 'application/xml': { schema: { type: 'string' } } },
};
const CLIENT_REQUEST_ID = requestHeader(
  'x-ms-client-request-id',
  'Echoed in the answer, as Azure does.',
);
const BYTES = { schema: { type: 'string', format: 'binary' } };
/** A blob is served with the content type of its path, as `read_file` serves it. */
const BLOB_CONTENT = Object.fromEntries(
  (readFile.replyContentTypes ?? ['application/octet-stream']).map((type) => [type, BYTES]),
);

const blobFile: PathItem = {
  summary: 'One file of a workspace as an Azure blob, through a storage link.',
  description:
    'Any Azure Blob client (the Azure SDKs, azcopy, rclone, curl) uses a link from `get_storage_link` as it is: the SAS query authorizes each call, no token is sent. Refusals are Azure XML errors, not problems.',
  parameters: [WORKSPACE_ID, BLOB_PATH, ...SAS_QUERY, CLIENT_REQUEST_ID],
  put: {
    operationId: 'storage_link_put_blob',
    summary:
      'Put Blob, Put Block (`comp=block`), Put Block List (`comp=blocklist`) or Set Blob Metadata (`comp=metadata`).',
    description: `Without \`comp\`: Put Blob, the body is the whole file (header \`x-ms-blob-type: BlockBlob\` required); up to the writer's storage quota, no 100 MB cap. \`comp=block&blockid=<base64>\`: stages one block of at most ${MAX_BLOCK_BYTES} bytes, never visible as a file (dropped after an hour or when committed). \`comp=blocklist\`: the body is \`<BlockList><Latest>id</Latest>…</BlockList>\` and commits the named blocks as the file. \`comp=metadata\`: replaces the newest version's \`x-ms-meta-*\` (200, no new version). Each save is a new version with a receipt, made by the agent the link is for. \`x-ms-meta-*\` headers are kept with the version (8 KiB at most) and served back; \`Content-MD5\` (of the body) or \`x-ms-blob-content-md5\` (of the whole file) is checked (400 \`Md5Mismatch\`, nothing stored) and kept. \`If-None-Match: *\` creates only; \`If-Match\` names the ETag to replace; \`If-Unmodified-Since\` / \`If-Modified-Since\` hold the write to the file's \`Last-Modified\` (412 \`ConditionNotMet\`). A copy from a URL (\`x-ms-copy-source\`) is refused.`,
    security: [],
    parameters: [
      query('comp', '`block` or `blocklist`; none for Put Blob.', false, {
        type: 'string',
        enum: ['block', 'blocklist', 'metadata'],
      }),
      query('blockid', 'With `comp=block`: the block id (base64).'),
      requestHeader('x-ms-blob-type', 'Put Blob: `BlockBlob`.'),
      requestHeader('if-none-match', '`*`: create only (409 `BlobAlreadyExists` over a file).'),
      requestHeader('if-match', 'The ETag the write must replace (412 `ConditionNotMet`).'),
    ],
    requestBody: {
      required: true,
      content: {
        'application/octet-stream': BYTES,
        'application/xml': { schema: { type: 'string' } },
      },
    },
    responses: {
      200: {
        description: 'Metadata replaced (Set Blob Metadata).',
        headers: AZURE_HEADERS,
      },
      201: {
        description: 'Saved (Put Blob, Put Block List) or staged (Put Block).',
        headers: { etag: header("The saved bytes' ETag."), ...AZURE_HEADERS },
      },
      default: AZURE_ERROR,
    },
  },
  get: {
    operationId: 'storage_link_get_blob',
    summary: 'Get Blob: the bytes of the file (newest version).',
    security: [],
    parameters: [
      requestHeader('range', 'One byte range, `bytes=first-last` (206).'),
      requestHeader('x-ms-range', "Azure's spelling of `Range`."),
      requestHeader('if-none-match', 'The ETag you have: 304 when unchanged.'),
    ],
    responses: {
      200: {
        description: 'The bytes, with the content type of the path (as `read_file`).',
        headers: {
          etag: header('The sha256 of the bytes, quoted.'),
          'content-length': header('Bytes in this answer.', { type: 'integer' }),
          'x-ms-blob-type': header('`BlockBlob`.'),
          ...AZURE_HEADERS,
        },
        content: BLOB_CONTENT,
      },
      206: {
        description: 'The one range asked for.',
        headers: { 'content-range': header('`bytes first-last/size`.'), ...AZURE_HEADERS },
        content: BLOB_CONTENT,
      },
      304: { description: '`If-None-Match` names the current ETag.' },
      default: AZURE_ERROR,
    },
  },
};

blobFile.delete = {
  operationId: 'storage_link_delete_blob',
  summary: 'Delete Blob: a link never deletes.',
  description:
    'Any link, read or write, is refused with `403 AuthorizationPermissionMismatch` (nothing is removed): delete files with `delete_file` and a token.',
  security: [],
  responses: { default: AZURE_ERROR },
};

const blobContainer: PathItem = {
  summary: 'A workspace as an Azure container, through a storage link.',
  parameters: [WORKSPACE_ID, ...SAS_QUERY, CLIENT_REQUEST_ID],
  get: {
    operationId: 'storage_link_container',
    summary:
      'List Blobs (`restype=container&comp=list`) or Get Container Properties (`restype=container`).',
    description:
      "List Blobs answers Azure's XML `EnumerationResults`, one page at a time (`NextMarker`); it needs a container link (`sr=c`) with read access.",
    security: [],
    parameters: [
      query('restype', '`container`.', true, { type: 'string', enum: ['container'] }),
      query('comp', '`list` for List Blobs; none for Get Container Properties.', false, {
        type: 'string',
        enum: ['list'],
      }),
      query('prefix', 'Only files whose path starts with this.'),
      query(
        'delimiter',
        'Usually `/`: paths below the next delimiter are rolled up as `BlobPrefix`.',
      ),
      query('marker', 'The `NextMarker` of the page before.'),
      query('maxresults', 'Files per page, at most 500.', false, {
        type: 'integer',
        minimum: 1,
        maximum: 500,
      }),
      query('include', 'Extra data to list, comma-separated, as Azure names it (e.g. `metadata`).'),
    ],
    responses: {
      200: {
        description: 'The listing (XML), or the container properties (no body).',
        headers: AZURE_HEADERS,
        content: { 'application/xml': { schema: { type: 'string' } } },
      },
      default: AZURE_ERROR,
    },
  },
};

/** Schemas the path items above refer to, for `components.schemas`. */
export const DOOR_SCHEMAS: Record<string, JsonSchema> = {
  JsonRpcMessage: JSON_RPC_MESSAGE,
  JsonRpcSentMessage: JSON_RPC_SENT_MESSAGE,
};

/** The path items of everything but the operations (the receipt keys are one: get_service_keys). */
export function doorPaths(): Record<string, PathItem> {
  const paths: Record<string, PathItem> = { '/health': health };
  for (const document of DOCUMENTS) {
    paths[document.path] = documentItem(document.path, document.summary, document.contentType);
  }
  const start = DOCUMENTS.find((document) => document.path === '/llms.txt')!;
  paths['/'] = documentItem(
    '/',
    `The service's address: the text of /llms.txt. ${start.summary}`,
    start.contentType,
  );
  paths['/openapi.json'] = openApiItem;
  paths['/mcp'] = mcp;
  paths[`${STORAGE_LINK_PREFIX}/{workspace_id}`] = blobContainer;
  paths[`${STORAGE_LINK_PREFIX}/{workspace_id}/{path}`] = blobFile;
  return paths;
}
