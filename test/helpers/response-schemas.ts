/**
 * Every JSON answer a test reads through ./http.ts is held to what the description says of it:
 * the response schema that /openapi.json declares for its operation, its status and its media
 * type. An answer with a status or a media type the operation does not declare, or a body its
 * schema refuses, fails the test that got it, so the description cannot drift from the service.
 *
 * The description is the one the service serves (protocol/openapi.ts, generated from the
 * operation table), with the operator's operations in it too (the service leaves them out of
 * /openapi.json, their routes being no route to anyone else). Routes are matched by the
 * service's own router, so a path reaches the operation the service ran. Each schema is
 * compiled once, on first use.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { generateOpenApi } from '../../protocol/openapi.ts';
import type { Operation } from '../../protocol/operation.ts';
import { OPERATION_LIST } from '../../protocol/operations.ts';
import { Router } from '../../server/http/router.ts';

type JsonObject = Record<string, unknown>;

interface ResponseObject {
  content?: Record<string, { schema?: JsonObject }>;
}
type Responses = Record<string, ResponseObject>;

const DOC = generateOpenApi(
  'http://service.test',
  OPERATION_LIST.map((operation) => ({ ...operation, operatorOnly: false })),
) as { paths: Record<string, Record<string, { responses: Responses }>>; components: JsonObject };

/** Where the components live for the validator: `#/components/schemas/X` is rewritten to it. */
const COMPONENTS_ID = 'https://service.test/components';
const retarget = (schema: unknown): JsonObject =>
  JSON.parse(
    JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${COMPONENTS_ID}#/$defs/`),
  ) as JsonObject;

const ajv = new Ajv2020({ allErrors: true, strict: false, logger: false });
addFormats.default(ajv);
ajv.addSchema({ $id: COMPONENTS_ID, $defs: retarget(DOC.components.schemas) });

const router = new Router<Operation>();
for (const operation of OPERATION_LIST) router.add(operation.method, operation.path, operation);

const compiled = new Map<string, ValidateFunction>();

/** What an answer's body must be, by where it came from; null when no rule applies. */
function declaredResponses(
  method: string,
  path: string,
  status: number,
): { name: string; responses: Responses } | null {
  let operation: Operation | null = null;
  try {
    operation = router.match(method, path).target;
  } catch {
    // Not an operation's route (a door, a download, or no route at all).
  }
  // To anyone but the operator, the operator's routes are no route at all: the unknown path's 404.
  if (operation?.operatorOnly && status === 404) return null;
  const verb = (method === 'HEAD' ? 'get' : method).toLowerCase();
  if (operation) {
    const template = operation.path.replace(/[:*]([a-z_]+)/g, '{$1}');
    const entry = DOC.paths[template]?.[verb];
    return entry ? { name: operation.name, responses: entry.responses } : null;
  }
  const entry = DOC.paths[path]?.[verb];
  return entry ? { name: `${method} ${path}`, responses: entry.responses } : null;
}

/** The Problem schema, for refusals on routes the description has no entry for. */
const PROBLEM: ResponseObject = {
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
};

/**
 * Throws when a JSON answer (`body`, already parsed) to `method target` is not what the
 * description declares for its status and media type.
 */
export function assertDescribedAnswer(
  method: string,
  target: string,
  status: number,
  contentType: string | null,
  body: unknown,
): void {
  const path = target.split('?')[0] as string;
  const media = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const declared = declaredResponses(method, path, status);
  const where = `${method} ${target} answered ${status} ${media}`;
  let response: ResponseObject | undefined;
  if (declared) {
    response = declared.responses[String(status)];
    if (!response) {
      throw new Error(`${where}: ${declared.name} declares no ${status} (response schemas)`);
    }
  } else if (media === 'application/problem+json') {
    response = PROBLEM;
  } else {
    return;
  }
  const schema = response.content?.[media]?.schema;
  if (!schema) {
    throw new Error(
      `${where}: ${declared?.name ?? 'the route'} declares no ${media} body for ${status} (response schemas)`,
    );
  }
  const key = `${declared?.name ?? 'problem'} ${status} ${media}`;
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajv.compile(retarget(schema));
    compiled.set(key, validate);
  }
  if (!validate(body)) {
    throw new Error(
      `${where}, which its declared response schema refuses (response schemas): ${ajv.errorsText(validate.errors, { separator: '; ' })}; body: ${JSON.stringify(body).slice(0, 500)}`,
    );
  }
}
