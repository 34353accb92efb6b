import { ERRORS } from './errors.ts';
import { toJsonSchema, type JsonSchema } from './json-schema.ts';
import { isBodyless, resolveBinding, type ResolvedBinding } from './binding.ts';
import { DOWNLOADS, type ReferenceDocument } from './documents.ts';
import { DOOR_SCHEMAS, doorPaths } from './openapi-doors.ts';
import {
  commonErrors,
  IDEMPOTENCY_KEY_PATTERN,
  jsonBodyLimit,
  pathParameters,
  restParameter,
  takesIdempotencyKey,
  type Operation,
} from './operation.ts';
import { OPERATION_LIST } from './operations.ts';
import { SERVICE_VERSION } from './version.ts';

const problemSchema: JsonSchema = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'code'],
  properties: {
    type: { type: 'string', format: 'uri' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string', description: 'What went wrong and what to change.' },
    code: { type: 'string', enum: Object.keys(ERRORS) },
  },
};

/** `#/$defs/X` inside generated schemas becomes `#/components/schemas/X` in the document. */
function hoist(schema: JsonSchema, components: Record<string, JsonSchema>): JsonSchema {
  const { $defs, ...rest } = schema;
  for (const [name, def] of Object.entries($defs ?? {})) components[name] = hoist(def, components);
  return JSON.parse(
    JSON.stringify(rest).replaceAll('"#/$defs/', '"#/components/schemas/'),
  ) as JsonSchema;
}

const BINARY: JsonSchema = { type: 'string', format: 'binary' };
const MARKDOWN_TYPE = 'text/markdown';
const HTML_TYPE = 'text/html';

/** server/http/idempotency.ts, for the writes takesIdempotencyKey names. */
const IDEMPOTENCY_KEY = {
  name: 'idempotency-key',
  in: 'header',
  required: false,
  description:
    "Runs this write at most once: the same key (1 to 255 printable ASCII characters, no space; a random UUID is best) with the same request replays the first answer, with `Idempotent-Replayed: true`, for 24 hours; with another request it is refused (`422 idempotency_key_reused`), and while the first is still running `409 idempotency_key_in_use`. Keys are your own: another agent's same key is another key.",
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: IDEMPOTENCY_KEY_PATTERN.source },
};

/** Request headers whose form is fixed, as the routes that read them check it. */
const HEADER_SCHEMAS: Record<string, JsonSchema> = {
  // Base64 of the 16 bytes of an MD5, as actors/files/content-md5.ts reads it.
  'content-md5': { type: 'string', pattern: '^[A-Za-z0-9+/]{22}==$' },
};

function header(description: string): Record<string, unknown> {
  return { description, schema: { type: 'string' } };
}

/** The content of a success answer, by the binding's reply kind. */
function replyContent(
  reply: ResolvedBinding['reply'],
  schema: JsonSchema,
  byteTypes: readonly string[] | undefined,
): Record<string, unknown> {
  switch (reply.kind) {
    case 'bytes':
      return Object.fromEntries(
        (byteTypes ?? [reply.contentType ?? 'application/octet-stream']).map((type) => [
          type,
          { schema: BINARY },
        ]),
      );
    case 'markdown':
      return { [MARKDOWN_TYPE]: { schema: { type: 'string' } } };
    case 'json_or_markdown': {
      const json = { 'application/json': { schema } };
      const markdown = { [MARKDOWN_TYPE]: { schema: { type: 'string' } } };
      return reply.prefer === 'markdown' ? { ...markdown, ...json } : { ...json, ...markdown };
    }
    case 'json_or_html':
      return { 'application/json': { schema }, [HTML_TYPE]: { schema: { type: 'string' } } };
    case 'json':
      return { 'application/json': { schema } };
  }
}

function operationEntry(operation: Operation, components: Record<string, JsonSchema>) {
  const binding = resolveBinding(operation.method, operation.binding);
  const pathNames = pathParameters(operation.path);
  const rest = restParameter(operation.path);
  const input = hoist(toJsonSchema(operation.input, 'input'), components);
  const properties = (input.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((input.required as string[] | undefined) ?? []);
  const parameters: unknown[] = pathNames.map((name) => ({
    name,
    in: 'path',
    required: true,
    ...(name === rest
      ? {
          description:
            'A path of one or more segments separated by `/` (this parameter spans segments): percent-encode each segment on its own, or the whole path (`%2F` is decoded to `/`). Decoded, it is held to every path rule: an empty, `.` or `..` segment or a control character, plain or encoded, is refused with `invalid_path`.',
        }
      : {}),
    schema: properties[name] ?? { type: 'string' },
  }));
  const bodyProperties: Record<string, JsonSchema> = {};
  for (const [name, schema] of Object.entries(properties)) {
    if (pathNames.includes(name)) continue;
    if (binding.body.kind !== 'json') {
      const { description, ...rest } = schema;
      parameters.push({
        name,
        in: 'query',
        required: required.has(name),
        description,
        schema: rest,
      });
    } else {
      bodyProperties[name] = schema;
    }
  }
  for (const [name, description] of Object.entries(binding.requestHeaders)) {
    // OpenAPI describes Content-Type with the request body, not as a parameter.
    if (name === 'content-type' || name === 'accept' || name === 'authorization') continue;
    parameters.push({
      name,
      in: 'header',
      required: false,
      description,
      schema: HEADER_SCHEMAS[name] ?? { type: 'string' },
    });
  }
  if (takesIdempotencyKey(operation)) parameters.push(IDEMPOTENCY_KEY);
  const output = hoist(toJsonSchema(operation.output, 'output'), components);
  const replyHeaders: Record<string, unknown> = {};
  for (const [name, description] of Object.entries(binding.replyHeaders)) {
    replyHeaders[name] = header(description);
  }
  const bytes = binding.reply.kind === 'bytes';
  const byteHeaders: Record<string, unknown> = bytes
    ? {
        etag: header('The entity tag; send it in `If-None-Match` to get 304 when unchanged.'),
        'accept-ranges': header('`bytes`: one range may be asked for with `Range`.'),
        'content-length': { description: 'Bytes in this answer.', schema: { type: 'integer' } },
      }
    : {};
  const success = (status: number, description: string, schema: JsonSchema) => ({
    description,
    ...(isBodyless(status)
      ? {}
      : { content: replyContent(binding.reply, schema, operation.replyContentTypes) }),
    ...(Object.keys(replyHeaders).length + Object.keys(byteHeaders).length > 0
      ? { headers: { ...byteHeaders, ...replyHeaders } }
      : {}),
  });
  const responses: Record<string, unknown> = {
    [operation.status]: success(operation.status, operation.summary, output),
  };
  for (const declared of binding.statuses) {
    const schema = declared.schema
      ? hoist(toJsonSchema(declared.schema, 'output'), components)
      : output;
    responses[declared.status] = success(declared.status, declared.description, schema);
  }
  if (bytes && operation.method === 'GET') {
    responses[206] = {
      description: 'The one range asked for with `Range`.',
      content: replyContent(binding.reply, output, operation.replyContentTypes),
      headers: {
        ...byteHeaders,
        'content-range': header('`bytes first-last/size`.'),
        ...replyHeaders,
      },
    };
    responses[304] = {
      description: '`If-None-Match` names the current entity tag: nothing changed.',
      headers: { etag: byteHeaders.etag },
    };
  }
  const codes = [...new Set([...commonErrors(operation), ...operation.errors])];
  for (const code of codes) {
    const status = String(ERRORS[code].status);
    const existing = responses[status] as { description: string } | undefined;
    responses[status] = {
      description: existing ? `${existing.description}, ${code}` : code,
      content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
    };
  }
  const entry: Record<string, unknown> = {
    operationId: operation.name,
    summary: operation.summary,
    description: operation.description,
    parameters,
    responses,
  };
  if (binding.body.kind === 'json') {
    const bodyRequired = [...required].filter((name) => !pathNames.includes(name));
    entry.requestBody = {
      required: true,
      description: `At most ${jsonBodyLimit(operation)} bytes of JSON; a longer body is refused with \`413 payload_too_large\` before it is read.`,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: bodyProperties,
            ...(bodyRequired.length > 0 ? { required: bodyRequired } : {}),
            additionalProperties: false,
            ...wholeBodyRules(input),
          },
        },
      },
    };
  }
  if (binding.body.kind === 'bytes') {
    entry.requestBody = {
      required: true,
      description: `The raw bytes, streamed; at most ${binding.body.maxBytes} bytes (more is refused with 413 before it is read).`,
      content: { [binding.body.contentType ?? 'application/octet-stream']: { schema: BINARY } },
    };
  }
  if (operation.auth === 'agent') entry.security = [{ bearer: [] }];
  if (operation.auth === 'optional') entry.security = [{}, { bearer: [] }];
  if (operation.auth === 'none') entry.security = [];
  return entry;
}

/** The keywords of an input's object schema that its fields and their list do not carry. */
const FIELD_KEYWORDS = new Set(['type', 'properties', 'required', 'additionalProperties']);

/**
 * The rules an input states about the body as a whole (`.meta({ anyOf, dependentRequired })` on
 * its object: which fields go together, which one of several must be sent), kept on the
 * request body's schema so that a client sees them.
 */
function wholeBodyRules(input: JsonSchema): JsonSchema {
  return Object.fromEntries(Object.entries(input).filter(([key]) => !FIELD_KEYWORDS.has(key)));
}

/** A file served as it is (protocol/documents.ts, DOWNLOADS). */
function downloadItem(download: ReferenceDocument): Record<string, unknown> {
  const mediaType = download.contentType.split(';')[0] as string;
  return {
    get: {
      operationId: `download${download.path.replace(/[^a-z]+/g, '_')}`,
      summary: download.summary,
      security: [],
      responses: {
        200: {
          description: 'The file, byte for byte.',
          content: {
            [mediaType]: {
              // A JSON download is a JSON document to a client that checks what it read.
              schema: mediaType === 'application/json' ? { type: 'object' } : BINARY,
            },
          },
        },
      },
    },
  };
}

/** The same entry for HEAD: the headers of GET, no body. */
function headEntry(get: Record<string, unknown>): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(get.responses as Record<string, object>)) {
    const copy: Record<string, unknown> = { ...response };
    delete copy.content;
    responses[status] = copy;
  }
  return {
    ...get,
    operationId: `${get.operationId as string}_head`,
    summary: `The headers of GET (${get.summary as string}), without the body.`,
    responses,
  };
}

/**
 * The OpenAPI 3.1 description of every public operation, generated from the table (and from
 * each operation's transport binding), and of the other doors (./openapi-doors.ts), with HEAD
 * beside every GET.
 */
export function generateOpenApi(
  baseUrl: string,
  operations: readonly Operation[] = OPERATION_LIST,
): Record<string, unknown> {
  const { paths, components } = describedOperations(operations);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent collaboration, marketplace and reputation service',
      version: SERVICE_VERSION,
      description: `Start at ${baseUrl}/llms.txt. Errors are application/problem+json with a stable \`code\` (see ${baseUrl}/protocol).`,
    },
    servers: [{ url: baseUrl }],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'Your API token. A request may instead (or as well) be signed per RFC 9421 with an Ed25519 key you added (`Signature-Input`, `Signature`; /protocol#signed-requests): a signed request needs no token, and an agent that requires signatures (set_signature_policy) may write only with one.',
        },
      },
    },
  };
}

interface Described {
  paths: Record<string, Record<string, unknown>>;
  components: Record<string, JsonSchema>;
}

/**
 * The paths and schemas of a list of operations, made once per list (the same operation objects
 * in the same order): they name no base URL, and making them costs ~70 ms of CPU, which each
 * server start (a test's among them) would pay again. Shared: read, never changed.
 */
const describedByList = new Map<string, Described>();
const operationIds = new WeakMap<Operation, number>();
let nextOperationId = 0;

function describedOperations(operations: readonly Operation[]): Described {
  const key = operations
    .map((operation) => {
      let id = operationIds.get(operation);
      if (id === undefined) operationIds.set(operation, (id = nextOperationId++));
      return id;
    })
    .join(' ');
  let described = describedByList.get(key);
  if (!described) {
    described = describeOperations(operations);
    describedByList.set(key, described);
  }
  return described;
}

function describeOperations(operations: readonly Operation[]): Described {
  const components: Record<string, JsonSchema> = { Problem: problemSchema, ...DOOR_SCHEMAS };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const operation of operations) {
    // The operator's own operations are no route at all to anyone else (a 404): not listed.
    if (operation.operatorOnly) continue;
    const path = operation.path.replace(/[:*]([a-z_]+)/g, '{$1}');
    paths[path] ??= {};
    paths[path][operation.method.toLowerCase()] = operationEntry(operation, components);
  }
  Object.assign(paths, doorPaths());
  for (const download of DOWNLOADS) paths[download.path] = downloadItem(download);
  // Every GET route answers HEAD (server/http/router.ts): the same statuses and headers.
  for (const item of Object.values(paths)) {
    if (item.get) item.head = headEntry(item.get as Record<string, unknown>);
  }
  return { paths, components };
}
