import { DOCUMENTS } from './documents.ts';
import { ERRORS } from './errors.ts';
import { toJsonSchema, type JsonSchema } from './json-schema.ts';
import { isBodyless, resolveBinding, type ResolvedBinding } from './binding.ts';
import { commonErrors, pathParameters, restParameter, type Operation } from './operation.ts';
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

function header(description: string): Record<string, unknown> {
  return { description, schema: { type: 'string' } };
}

/** The content of a success answer, by the binding's reply kind. */
function replyContent(
  reply: ResolvedBinding['reply'],
  schema: JsonSchema,
): Record<string, unknown> {
  switch (reply.kind) {
    case 'bytes':
      return { [reply.contentType ?? 'application/octet-stream']: { schema: BINARY } };
    case 'markdown':
      return { [MARKDOWN_TYPE]: { schema: { type: 'string' } } };
    case 'json_or_markdown': {
      const json = { 'application/json': { schema } };
      const markdown = { [MARKDOWN_TYPE]: { schema: { type: 'string' } } };
      return reply.prefer === 'markdown' ? { ...markdown, ...json } : { ...json, ...markdown };
    }
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
            'One or more segments separated by `/`, each percent-encoded on its own (this parameter spans segments). An empty, `.` or `..` segment, NUL, or an encoded `/` (`%2F`) is refused with `invalid_path`.',
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
      schema: { type: 'string' },
    });
  }
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
    ...(isBodyless(status) ? {} : { content: replyContent(binding.reply, schema) }),
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
      content: replyContent(binding.reply, output),
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
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: bodyProperties,
            ...(bodyRequired.length > 0 ? { required: bodyRequired } : {}),
            additionalProperties: false,
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
 * The OpenAPI 3.1 description of every public operation and document, generated from the
 * tables (and from each operation's transport binding).
 */
export function generateOpenApi(
  baseUrl: string,
  operations: readonly Operation[] = OPERATION_LIST,
): Record<string, unknown> {
  const components: Record<string, JsonSchema> = { Problem: problemSchema };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const operation of operations) {
    // The operator's own operations are no route at all to anyone else (a 404): not listed.
    if (operation.operatorOnly) continue;
    const path = operation.path.replace(/[:*]([a-z_]+)/g, '{$1}');
    paths[path] ??= {};
    const entry = operationEntry(operation, components);
    paths[path][operation.method.toLowerCase()] = entry;
    const reply = resolveBinding(operation.method, operation.binding).reply;
    if (operation.method === 'GET' && reply.kind === 'bytes') paths[path].head = headEntry(entry);
  }
  paths['/health'] = {
    get: {
      operationId: 'health',
      summary: 'Answers 200 once the service takes requests.',
      security: [],
      responses: {
        200: {
          description: 'The service is up.',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['status', 'service_version'],
                properties: { status: { const: 'ok' }, service_version: { type: 'string' } },
              },
            },
          },
        },
      },
    },
  };
  for (const document of [
    ...DOCUMENTS,
    { path: '/openapi.json', summary: 'This document.', contentType: 'application/json' },
  ]) {
    paths[document.path] = {
      get: {
        operationId: `document${document.path.replace(/[^a-z]+/g, '_')}`,
        summary: document.summary,
        security: [],
        responses: {
          200: {
            description: document.summary,
            content: {
              [document.contentType.split(';')[0] as string]: { schema: { type: 'string' } },
            },
          },
        },
      },
    };
  }
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
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    },
  };
}
