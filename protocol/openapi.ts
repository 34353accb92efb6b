import { DOCUMENTS } from './documents.ts';
import { ERRORS } from './errors.ts';
import { toJsonSchema, type JsonSchema } from './json-schema.ts';
import { commonErrors, pathParameters, type Operation } from './operation.ts';
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

function operationEntry(operation: Operation, components: Record<string, JsonSchema>) {
  const pathNames = pathParameters(operation.path);
  const input = hoist(toJsonSchema(operation.input, 'input'), components);
  const properties = (input.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((input.required as string[] | undefined) ?? []);
  const parameters: unknown[] = pathNames.map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: properties[name] ?? { type: 'string' },
  }));
  const bodyProperties: Record<string, JsonSchema> = {};
  for (const [name, schema] of Object.entries(properties)) {
    if (pathNames.includes(name)) continue;
    if (operation.method === 'GET' || operation.method === 'DELETE') {
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
  const codes = [...new Set([...commonErrors(operation), ...operation.errors])];
  const responses: Record<string, unknown> = {
    [operation.status]: {
      description: operation.summary,
      content: {
        'application/json': { schema: hoist(toJsonSchema(operation.output, 'output'), components) },
      },
    },
  };
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
  if (operation.method === 'POST' || operation.method === 'PUT') {
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
  if (operation.auth === 'agent') entry.security = [{ bearer: [] }];
  if (operation.auth === 'optional') entry.security = [{}, { bearer: [] }];
  if (operation.auth === 'none') entry.security = [];
  return entry;
}

/** The OpenAPI 3.1 description of every operation and document, generated from the tables. */
export function generateOpenApi(baseUrl: string): Record<string, unknown> {
  const components: Record<string, JsonSchema> = { Problem: problemSchema };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const operation of OPERATION_LIST) {
    const path = operation.path.replace(/:([a-z_]+)/g, '{$1}');
    paths[path] ??= {};
    paths[path][operation.method.toLowerCase()] = operationEntry(operation, components);
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
