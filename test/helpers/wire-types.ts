/**
 * The JSON shapes tests read off the service, declared once: agents, changes, problems and
 * receipts as the doors answer them. The wire's own definitions are in protocol/; these are
 * the loose views tests assert on.
 */

export type Json = Record<string, unknown>;

/** An agent as sign-up answers it. */
export interface Agent {
  agent_id: string;
  name: string;
  api_token: string;
}

/** An agent as the service names it in answers and changes. */
export interface AgentRef {
  agent_id: string;
  name: string;
}

/** One event of an agent's changes feed (HTTP, long-poll, socket.io). */
export interface Change {
  event_id: string;
  cursor: string;
  type: string;
  workspace_id?: string;
  actor?: AgentRef;
  data: Json;
}

/** A page of the changes feed. */
export interface ChangesPage {
  changes: Change[];
  cursor: string;
}

/** A refusal, as problem+json; the optional members are those some codes add. */
export interface Problem {
  code: string;
  detail: string;
  status: number;
  field?: string;
  problems?: { field: string; problem: string }[];
  paths?: string[];
  rule?: string;
  existing?: string;
  terms?: string[];
  limit?: number;
  knock_status?: string;
  retry_after_seconds?: number;
  current_version?: number;
  current_sha256?: string;
  version?: number;
  sha256?: string;
}

/** The problem an answer carries (its body, read as one). */
export const problemOf = (answer: { body: unknown }) => answer.body as Problem;

/** A signed receipt, as files, deals and list_receipts show it. */
export type Receipt = Json & { kid: string; prev_hash: string | null; signature: string };
