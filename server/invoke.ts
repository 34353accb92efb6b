import type { z } from 'zod';
import { signedWith, unsigned, type Principal } from '../actors/kernel/principal.ts';
import type { SignatureProof } from '../actors/kernel/request-signatures.ts';
import { assertSignedWrite, assertTokenScope } from '../actors/kernel/token-scope.ts';
import { signatureFault } from '../protocol/message-signature.ts';
import type { Call } from '../actors/kernel/handler.ts';
import type { CallTransport } from '../protocol/binding.ts';
import { HANDLERS } from '../actors/handlers.ts';
import type { Services } from '../actors/kernel/services.ts';
import { ServiceError, type ErrorCode } from '../protocol/errors.ts';
import {
  integerRangeCheck,
  refuseHostileShape,
  type IntegerRangeCheck,
} from '../protocol/input-guard.ts';
import { toJsonSchema } from '../protocol/json-schema.ts';
import { commonErrors, restParameter, type Operation } from '../protocol/operation.ts';
import type { OperationName } from '../protocol/operations.ts';

/**
 * What every door does for an operation, in one place: resolve the caller, decode the input
 * with the operation's schema, run the handler. The doors differ only in how they gather the
 * raw input and the token, and how they write the answer.
 */
export async function invoke(
  services: Services,
  operation: Operation,
  rawInput: Record<string, unknown>,
  caller: {
    token: string | undefined;
    /** What the request's RFC 9421 signature proved (the door verified it), if it had one. */
    signature?: SignatureProof | null;
    signal: AbortSignal;
    transport?: CallTransport;
    places?: InputPlaces;
  },
): Promise<unknown> {
  const principal = await authenticate(services, operation, caller.token, caller.signature);
  return run(services, operation, principal, rawInput, caller);
}

/**
 * The calling agent, as the operation's auth asks: required, taken when sent, or ignored.
 * A bad token is refused even where a token is optional: silently ignoring it would hide a
 * mistake the agent wants to know about. A valid signature (verified by the door) names the
 * agent too: a token sent with it must be that agent's. An agent that requires signatures gets,
 * for an unsigned call, a principal that may only read (`run` holds it so).
 */
export async function authenticate(
  services: Services,
  operation: Operation,
  token: string | undefined,
  signature?: SignatureProof | null,
): Promise<Principal | null> {
  if (operation.auth === 'none') return null;
  if (signature) return signedCaller(services, token, signature);
  if (operation.auth === 'optional' && token === undefined) return null;
  // callerForToken's steps, inline: this runs on every request, one promise fewer.
  const resolved = services.tokens.resolve(token);
  const grant = 'then' in resolved ? await resolved : resolved;
  const agent = known(await services.agents.get(grant.agentId));
  const principal = services.tokens.principalFor(grant, agent.principal);
  return agent.requireSignature ? unsigned(principal) : principal;
}

/** The principal of a signed call: the signing key's agent, with the token's reach if one came. */
async function signedCaller(
  services: Services,
  token: string | undefined,
  signature: SignatureProof,
): Promise<Principal> {
  const agent = known(await services.agents.get(signature.agentId));
  if (token === undefined) return signedWith(agent.principal, signature.keyId);
  const resolved = services.tokens.resolve(token);
  const grant = 'then' in resolved ? await resolved : resolved;
  if (grant.agentId !== signature.agentId) {
    throw signatureFault(
      'agent_mismatch',
      'The request is signed by a key of one agent and carries the token of another: send the token of the agent whose key signs, or no token.',
    );
  }
  return signedWith(services.tokens.principalFor(grant, agent.principal), signature.keyId);
}

/** A live agent, as the agents capability keeps them (services.agents). */
type LiveAgent = NonNullable<Awaited<ReturnType<Services['agents']['get']>>>;

/** The live agent a token belongs to, or 401 `unauthorized`; every door resolves tokens here. */
export async function agentForToken(
  services: Services,
  token: string | undefined,
): Promise<LiveAgent> {
  return (await callerForToken(services, token)).agent;
}

/** The live agent a token belongs to and the principal of calls made with that token. */
export async function callerForToken(
  services: Services,
  token: string | undefined,
): Promise<{ agent: LiveAgent; principal: Principal }> {
  // A token seen before resolves at once: no promise to wait for.
  const resolved = services.tokens.resolve(token);
  const grant = 'then' in resolved ? await resolved : resolved;
  const agent = known(await services.agents.get(grant.agentId));
  return { agent, principal: services.tokens.principalFor(grant, agent.principal) };
}

function known(agent: LiveAgent | null): LiveAgent {
  if (!agent) {
    throw new ServiceError(
      'unauthorized',
      'That API token is not known: sign up again if it was lost.',
    );
  }
  return agent;
}

/** Any operation's handler, as the doors call it. */
export type AnyHandler = (call: Call & CallTransport, input: unknown) => Promise<unknown>;

/**
 * Where a door took an operation's fields from, so that a refusal names them as the caller
 * sent them: over HTTP the path parameters travel in the path and the others in the body or
 * the query. A door that gives none (MCP) takes every field as an argument.
 */
export interface InputPlaces {
  readonly pathParameters: readonly string[];
  /** Where the fields other than path parameters travel: MCP carries all as arguments. */
  readonly others: 'body' | 'query' | 'arguments';
  /** Names the door takes beside the schema's fields (MCP's `content`, `content_base64`). */
  readonly alsoTaken?: readonly string[];
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * Decodes the input and runs the handler for an already authenticated caller. `transport` is
 * what the operation's binding gives the handler besides its input (protocol/binding.ts): a
 * byte body, the declared request headers, the negotiated format. The result is the handler's
 * own: a value, or a `reply()` (protocol/binding.ts) for the door to unwrap. `handler` is the
 * operation's entry in HANDLERS unless given (test-only operations bring their own).
 */
export async function run(
  services: Services,
  operation: Operation,
  principal: Principal | null,
  rawInput: Record<string, unknown>,
  caller: {
    readonly signal: AbortSignal;
    readonly transport?: CallTransport;
    readonly places?: InputPlaces;
  },
  handler = HANDLERS[operation.name as OperationName] as AnyHandler,
): Promise<unknown> {
  const input = decodeInput(
    operation.input,
    rawInput,
    restParameter(operation.path),
    caller.places,
  );
  // A restricted token is held to its scopes here, for every door (actors/kernel/token-scope.ts).
  const grant = principal?.token;
  if (grant?.restricted) assertTokenScope(operation, grant, input);
  // An unsigned call of an agent that requires signatures reads only, at every door.
  if (principal?.signatureRequired) assertSignedWrite(operation);
  const answer = handler(new HandlerCall(services, principal, caller), input);
  if (!services.config.strictProtocol) return answer;
  return answer.catch((error: unknown) => {
    throw undeclaredAsFailure(operation, error);
  });
}

/**
 * What a handler is called with: a class, so that every call shares one shape and its getter.
 * The signal is read only by handlers that wait; making one costs time on every request.
 */
class HandlerCall implements Call, CallTransport {
  readonly body: CallTransport['body'];
  readonly headers: Readonly<Record<string, string>>;
  readonly format: 'json' | 'markdown';

  constructor(
    readonly services: Services,
    readonly principal: Principal | null,
    private readonly caller: { readonly signal: AbortSignal; readonly transport?: CallTransport },
  ) {
    const transport = caller.transport;
    this.body = transport?.body;
    this.headers = transport?.headers ?? NO_HEADERS;
    this.format = transport?.format ?? 'json';
  }

  get signal(): AbortSignal {
    return this.caller.signal;
  }
}

/** Each operation's own codes and the common ones (protocol/operation.ts), made on first use. */
const declaredCodes = new WeakMap<Operation, ReadonlySet<ErrorCode>>();

/**
 * In a strict service (`strictProtocol`, the tests'): a ServiceError whose code the operation
 * declares neither in its `errors` nor among the common ones becomes a 500 naming it, so that
 * /openapi.json cannot under-declare what a test meets. It is also written to stderr: the test
 * servers' log is silent, and this is a bug to fix in the table, not noise.
 */
function undeclaredAsFailure(operation: Operation, error: unknown): unknown {
  if (!(error instanceof ServiceError)) return error;
  let declared = declaredCodes.get(operation);
  if (!declared) {
    declared = new Set([...commonErrors(operation), ...operation.errors]);
    declaredCodes.set(operation, declared);
  }
  if (declared.has(error.code)) return error;
  const detail =
    `${operation.name} answered \`${error.code}\`, which it does not declare ` +
    `(protocol/): ${error.message}`;
  process.stderr.write(`strictProtocol: ${detail}\n`);
  return new ServiceError('internal_error', detail, { undeclared_code: error.code });
}

/**
 * Decodes with the operation's schema; refusals name the field and say what to send. Every door
 * and every operation passes here, so the rules no schema states are held here too
 * (protocol/input-guard.ts): no NUL in any text, no nesting past a bound, integers within the
 * database's range. `pathField` is the operation's file path (NUL there is `invalid_path`);
 * `places` says where the door took the fields from, for the words of an `unknown_field`.
 */
export function decodeInput(
  schema: z.ZodObject,
  raw: Record<string, unknown>,
  pathField?: string,
  places?: InputPlaces,
): unknown {
  refuseHostileShape(raw, { pathField });
  const parsed = schema.safeParse(raw);
  if (parsed.success) {
    integerCheckOf(schema)?.(parsed.data);
    return parsed.data;
  }
  const unknownIssues = parsed.error.issues.filter((issue) => issue.code === 'unrecognized_keys');
  if (unknownIssues.length > 0) {
    const unknownKeys = unknownIssues.flatMap((issue) => issue.keys);
    // A key unknown inside a field is named by its whole path; the list of what the operation
    // takes is of its own fields, so it is given only when the unknown keys are among those.
    const nested = unknownIssues.some((issue) => issue.path.length > 0);
    const names = unknownIssues.flatMap((issue) =>
      issue.keys.map((key) => quoted([...issue.path, key].join('.'))),
    );
    throw new ServiceError(
      'unknown_field',
      `Unknown field${names.length > 1 ? 's' : ''} ${names.join(', ')}.` +
        (nested ? '' : ` ${whatItTakes(Object.keys(schema.shape), places)}`),
      { fields: unknownKeys },
    );
  }
  const issues = parsed.error.issues.slice(0, 5).map((issue) => {
    const field = issue.path.join('.') || '(body)';
    return { field, message: issue.message };
  });
  throw new ServiceError(
    'invalid_input',
    issues.map((issue) => `${issue.field}: ${issue.message}`).join('; '),
    { field: issues[0]?.field, issues },
  );
}

/**
 * The fields an operation takes, said where the caller sends them: over HTTP the body's or the
 * query's, with the path parameters named apart (sent in the body they are refused too).
 */
function whatItTakes(fields: readonly string[], places: InputPlaces | undefined): string {
  const inPath = places ? fields.filter((name) => places.pathParameters.includes(name)) : [];
  const carried = [
    ...fields.filter((name) => !inPath.includes(name)),
    ...(places?.alsoTaken ?? []),
  ];
  const where = places && places.others !== 'arguments' ? `The ${places.others}` : 'This operation';
  const taken =
    carried.length > 0
      ? `${where} takes: ${carried.map(quoted).join(', ')}.`
      : `${where} takes no fields.`;
  if (inPath.length === 0) return taken;
  return `${taken} ${inPath.map(quoted).join(', ')} ${inPath.length > 1 ? 'go' : 'goes'} in the path.`;
}

function quoted(name: string): string {
  return `\`${name}\``;
}

/** Each input's integer range check (null: it has no integer field), made on first use. */
const integerChecks = new WeakMap<z.ZodObject, IntegerRangeCheck | null>();

function integerCheckOf(schema: z.ZodObject): IntegerRangeCheck | null {
  let check = integerChecks.get(schema);
  if (check === undefined) {
    check = integerRangeCheck(toJsonSchema(schema, 'input'));
    integerChecks.set(schema, check);
  }
  return check;
}
