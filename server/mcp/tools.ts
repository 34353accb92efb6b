import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { resolveBinding, type ResolvedBinding } from '../../protocol/binding.ts';
import { toJsonSchema } from '../../protocol/json-schema.ts';
import { DEFAULT_MAX_BODY_BYTES, jsonBodyLimit, type Operation } from '../../protocol/operation.ts';
import { base64Length, bytesArguments, MCP_MAX_CONTENT_BYTES, outputSchemaFor } from './binding.ts';

/** The body limit of an HTTP route that declares none (server/http/operation-route.ts). */

/** Room in a POST /mcp body around a call's arguments: JSON-RPC, tool name, api_token, _meta. */
const ENVELOPE_BYTES = 16 * 1024;

const TOKEN_ARGUMENT = {
  type: 'string',
  description:
    'Your API token, when you cannot send it as `Authorization: Bearer <api_token>`. Never share it.',
};

export interface ToolEntry {
  operation: Operation;
  binding: ResolvedBinding;
  tool: Tool;
  /**
   * The most bytes its arguments (as JSON, api_token and a byte body aside) may take: its HTTP
   * body limit. A byte body has a limit of its own (the binding's `maxBytes`).
   */
  argumentLimit: number;
  /** The most bytes a call of it may take on the wire, byte body (as base64) included. */
  wireLimit: number;
}

/**
 * The MCP tools, generated from the operation table once. Operator-only operations are tools
 * only for the operator: everyone else neither sees them listed nor can tell them from a name
 * that does not exist.
 */
export class ToolTable {
  private readonly byName = new Map<string, ToolEntry>();
  private readonly everyone: Tool[];
  private readonly operator: Tool[];
  /** The largest POST /mcp body any call may need; larger ones are refused unread. */
  readonly bodyLimit: number;

  constructor(operations: readonly Operation[]) {
    for (const operation of operations) {
      const binding = resolveBinding(operation.method, operation.binding);
      const argumentLimit =
        binding.body.kind === 'json' ? jsonBodyLimit(operation) : DEFAULT_MAX_BODY_BYTES;
      const wireLimit =
        binding.body.kind === 'bytes'
          ? argumentLimit + base64Length(Math.min(binding.body.maxBytes, MCP_MAX_CONTENT_BYTES))
          : argumentLimit;
      const tool = toolOf(operation, binding);
      this.byName.set(operation.name, { operation, binding, tool, argumentLimit, wireLimit });
    }
    const entries = [...this.byName.values()];
    this.operator = entries.map((entry) => entry.tool);
    this.everyone = entries
      .filter((entry) => entry.operation.operatorOnly !== true)
      .map((entry) => entry.tool);
    this.bodyLimit = Math.max(0, ...entries.map((entry) => entry.wireLimit)) + ENVELOPE_BYTES;
  }

  /** The tools a caller may see. */
  list(isOperator: boolean): Tool[] {
    return isOperator ? this.operator : this.everyone;
  }

  /** The tool of that name as the caller may see it: undefined when absent or not theirs. */
  find(name: string, isOperator: boolean): ToolEntry | undefined {
    const entry = this.byName.get(name);
    if (!entry || (entry.operation.operatorOnly === true && !isOperator)) return undefined;
    return entry;
  }

  /** Whether any tool of that name exists only for the operator (then its caller is looked up). */
  isOperatorOnly(name: string): boolean {
    return this.byName.get(name)?.operation.operatorOnly === true;
  }
}

function toolOf(operation: Operation, binding: ResolvedBinding): Tool {
  const input = toJsonSchema(operation.input, 'input') as Tool['inputSchema'];
  if (binding.body.kind === 'bytes') {
    input.properties = { ...(input.properties ?? {}), ...bytesArguments(binding.body.maxBytes) };
  }
  if (operation.auth !== 'none') {
    input.properties = { ...(input.properties ?? {}), api_token: TOKEN_ARGUMENT };
  }
  const output = outputSchemaFor(
    binding,
    operation.status,
    () => toJsonSchema(operation.output, 'output') as Tool['outputSchema'],
  );
  return {
    name: operation.name,
    title: operation.summary,
    description: operation.description,
    inputSchema: input,
    ...(output === undefined ? {} : { outputSchema: output }),
    annotations: { readOnlyHint: operation.readOnly === true, openWorldHint: false },
  };
}

/** The size of a call's arguments as an HTTP body would carry them. */
export function argumentBytes(args: Record<string, unknown>): number {
  return Buffer.byteLength(JSON.stringify(args));
}
