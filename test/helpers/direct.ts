import type { z } from 'zod';
import type { Services } from '../../actors/kernel/services.ts';
import { storageProblem } from '../../actors/kernel/storage-problems.ts';
import { isReply, type ByteBody, type ReplyBody } from '../../protocol/binding.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { OPERATIONS, type OperationName, type Operations } from '../../protocol/operations.ts';
import { agentForToken, invoke } from '../../server/invoke.ts';

/** What a caller sends an operation: its path parameters and fields, as one object. */
export type DirectInput<N extends OperationName> = z.input<Operations[N]['input']>;

/**
 * What the operation answers: its output (a `reply()` is unwrapped to its body). The door asks
 * for JSON, so an operation that answers JSON or markdown answers JSON here.
 */
export type DirectAnswer<N extends OperationName> = [
  NonNullable<Operations[N]['binding']>,
] extends [{ reply: { kind: 'json_or_markdown' } }]
  ? z.output<Operations[N]['output']>
  : ReplyBody<Operations[N]['binding'], z.output<Operations[N]['output']>>;

/** What a call carries besides its input, where the operation's binding reads it. */
export interface DirectTransport {
  /** A byte body (bytesBody() in protocol/binding.ts). */
  body?: ByteBody;
  /** Request headers the operation declares, lower-case names. */
  headers?: Readonly<Record<string, string>>;
}

/** An agent as sign-up answers it. */
export interface DirectAgent {
  agent_id: string;
  name: string;
  api_token: string;
}

/**
 * A door with no transport, for the rules of a capability (who may, what it refuses, what a
 * change leaves behind) without HTTP, sockets or MCP. A call takes the path every door takes
 * (server/invoke.ts): the token resolved as the operation's auth asks, the input decoded with
 * its schema, the handler run; a refusal comes back as the ServiceError the doors turn into a
 * problem, with its code. Operator-only operations are not there for anyone else, as over HTTP.
 * What only a transport does (body limits, Idempotency-Key, rate limits, statuses, headers) is
 * left to the suites that go through the real doors.
 */
export interface DirectDoor {
  /** Runs `name` as the agent holding `token` (none: an anonymous caller); throws refusals. */
  call<N extends OperationName>(
    name: N,
    input: DirectInput<N>,
    token?: string,
    transport?: DirectTransport,
  ): Promise<DirectAnswer<N>>;
  /** The refusal of a call that must be refused; fails the test when the call succeeds. */
  refusal<N extends OperationName>(
    name: N,
    input: DirectInput<N>,
    token?: string,
    transport?: DirectTransport,
  ): Promise<ServiceError>;
  /** A new agent, signed up through the door. */
  signUp(name?: string): Promise<DirectAgent>;
}

let names = 0;

/** The direct door over a running service's `services` (startTestServer in ./server.ts). */
export function directDoor(services: Services): DirectDoor {
  const call = async <N extends OperationName>(
    name: N,
    input: DirectInput<N>,
    token?: string,
    transport?: DirectTransport,
  ): Promise<DirectAnswer<N>> => {
    const operation = OPERATIONS[name];
    try {
      if (operation.operatorOnly && !(await isOperator(services, token))) {
        throw new ServiceError('not_found', `Nothing is at ${operation.method} ${operation.path}.`);
      }
      const answer = await invoke(services, operation, input as Record<string, unknown>, {
        token,
        signal: NEVER_ABORTED,
        transport: {
          body: transport?.body,
          headers: transport?.headers ?? {},
          format: 'json',
        },
      });
      return (isReply(answer) ? answer.body : answer) as DirectAnswer<N>;
    } catch (error) {
      throw asProblem(error);
    }
  };
  return {
    call,
    async refusal(name, input, token, transport) {
      let answer: unknown;
      try {
        answer = await call(name, input, token, transport);
      } catch (error) {
        if (error instanceof ServiceError) return error;
        throw error;
      }
      throw new Error(`${name} was expected to be refused, and answered ${JSON.stringify(answer)}`);
    },
    signUp: (name = `direct agent ${process.pid}-${++names}`) => call('sign_up', { name }),
  };
}

const NEVER_ABORTED = new AbortController().signal;

async function isOperator(services: Services, token: string | undefined): Promise<boolean> {
  try {
    return (await agentForToken(services, token)).principal.isOperator;
  } catch {
    return false;
  }
}

/**
 * A failure as every door maps it to a problem (actors/kernel/storage-problems.ts: a lost
 * database is `storage_unavailable`); a fault the doors would answer as `internal_error` is
 * thrown as it is, so that the test shows it.
 */
function asProblem(error: unknown): unknown {
  if (error instanceof ServiceError) return error;
  return storageProblem(error) ?? error;
}
