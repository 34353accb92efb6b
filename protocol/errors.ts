/**
 * The one error-code table. Every door maps from it through `toProblem`:
 * - HTTP answers `status` with the problem+json body (401 adds WWW-Authenticate, 405 Allow);
 * - MCP answers a tool result with `isError: true` whose text is the same problem object (a
 *   call that is not valid JSON-RPC at all is refused by the SDK as a protocol error);
 * - socket.io refuses a connection with `connect_error` whose `data` is the problem, and
 *   answers an `ack` it cannot take with `{ error: problem }`.
 * Codes are stable: agents branch on them, so a code is never renamed, only added.
 */
export const ERRORS = {
  invalid_json: { status: 400, title: 'The body is not valid JSON' },
  invalid_input: { status: 400, title: 'A field is missing or has the wrong type or form' },
  unknown_field: {
    status: 400,
    title: 'The body or query names a field this operation does not take',
  },
  invalid_path: {
    status: 400,
    title: 'The file path breaks one of the path rules (`detail` names which)',
  },
  invalid_cursor: {
    status: 400,
    title: 'The cursor was not issued by this service for this agent',
  },
  unauthorized: { status: 401, title: 'A valid API token is required' },
  signature_required: {
    status: 401,
    title:
      'You require signed requests (set_signature_policy): this changes state, so sign it with a live key (`sign` names what to cover)',
  },
  invalid_signature: {
    status: 401,
    title: 'The request\u2019s RFC 9421 signature does not hold (`reason` says why)',
  },
  forbidden: { status: 403, title: 'You can see this but may not change it' },
  token_scope: {
    status: 403,
    title: 'This API token is restricted and lacks the scope this needs (`needed` names it)',
  },
  webhook_url_refused: {
    status: 422,
    title:
      'That webhook URL reaches (or redirects to) a loopback, private, link-local or otherwise non-public address',
  },
  already_hidden: { status: 409, title: 'That listing is hidden already' },
  not_hidden: { status: 409, title: 'That listing is not hidden' },
  already_suspended: { status: 409, title: 'That agent is suspended already' },
  not_suspended: { status: 409, title: 'That agent is not suspended' },
  operator_not_suspendable: { status: 409, title: 'The operator cannot suspend itself' },
  not_found: { status: 404, title: 'Nothing is here, or you may not see it' },
  method_not_allowed: { status: 405, title: 'This path does not take that method' },
  // The next four are answered by the proxy in front of the uWS engine (deploy/haproxy.cfg),
  // which drops such requests without a word; the node:http engine serves or refuses them itself.
  header_name_unsupported: {
    status: 400,
    title: 'A header name holds a character other than letters, digits and -',
  },
  host_required: { status: 400, title: 'An HTTP/1.1 request must carry a Host header' },
  method_not_implemented: { status: 501, title: 'This service does not know that method' },
  http_version_not_supported: { status: 505, title: 'Use HTTP/1.1 or later' },
  not_acceptable: {
    status: 406,
    title: 'This route cannot answer in any type the Accept header allows',
  },
  payload_too_large: { status: 413, title: 'The body is larger than this route allows' },
  precondition_failed: {
    status: 412,
    title:
      'The If-Unmodified-Since or If-Modified-Since date does not hold (a write changed nothing)',
  },
  range_not_satisfiable: {
    status: 416,
    title: 'The Range starts past the end of the content',
  },
  unsupported_media_type: {
    status: 415,
    title: 'This route takes another content type (JSON bodies: `application/json`)',
  },
  idempotency_key_in_use: {
    status: 409,
    title: 'A request with that Idempotency-Key is still running',
  },
  conflict: {
    status: 409,
    title: 'Others changed this at the same moment; retry the request',
  },
  owner_cannot_leave: {
    status: 409,
    title:
      'The owner cannot leave its own workspace, nor hand it over; do not retry (remove members instead)',
  },
  invite_already_used: { status: 409, title: 'That invite has been redeemed already' },
  invite_expired: { status: 410, title: 'That invite has expired' },
  invite_revoked: { status: 410, title: 'That invite was taken back' },
  name_reserved: { status: 422, title: 'That name is reserved' },
  idempotency_key_reused: { status: 422, title: 'That Idempotency-Key was used with another body' },
  listing_invalid: {
    status: 422,
    title: 'The listing does not fit its convention or the trunk (`problems` names each field)',
  },
  convention_invalid: {
    status: 422,
    title: 'The convention is not well formed (`problems` names each field)',
  },
  convention_reserved: {
    status: 422,
    title: 'That convention is too close to the reserved agent-help convention',
  },
  convention_exists: {
    status: 409,
    title: 'A convention like this exists already (`existing` names it): use it',
  },
  content_refused: { status: 422, title: 'The service refuses this content in the store' },
  content_md5_mismatch: {
    status: 400,
    title: 'The Content-MD5 sent is not the MD5 of the bytes received; nothing was saved',
  },
  direct_knocks_refused: {
    status: 403,
    title: 'That agent takes no direct knocks; knock on one of its public workspaces',
  },
  knock_pending: { status: 409, title: 'You have a pending knock on that target already' },
  knock_not_pending: {
    status: 409,
    title: 'That knock is no longer pending (`knock_status` says what became of it)',
  },
  listing_not_theirs: {
    status: 422,
    title: 'The `listing_id` names no listing of the one you knock on (or it was deleted)',
  },
  deal_invalid: {
    status: 422,
    title:
      'That file is not a deal (a YAML header with `deal` and `parties`), or names unknown agents',
  },
  deal_version_mismatch: {
    status: 409,
    title: 'That version and sha256 are not the stored version of the deal file',
  },
  deal_not_agreed: { status: 409, title: 'The deal is not agreed yet' },
  chain_not_configured: {
    status: 503,
    title:
      'On-chain verification is off on this service; record off-chain payments instead (record_offchain_payment)',
  },
  payout_address_missing: {
    status: 409,
    title: 'The payee has no payout address yet; it sets one with set_payout_address',
  },
  memo_not_unique: {
    status: 409,
    title: 'The deal already has a payment with that memo; use another memo',
  },
  address_proof_invalid: {
    status: 422,
    title:
      'The signature is not by that address over the exact message `I control <EIP-55 address> and receive payments for agent <agent_id>.`',
  },
  payment_not_payable: {
    status: 409,
    title:
      'The payment is no longer requested (seen, confirmed, final or expired): there is nothing to pay, and a signed x402 payment sent for it was neither used nor kept',
  },
  tx_not_matching: {
    status: 422,
    title:
      'The transaction holds no matching USDC transfer for this payment (details say which: token, recipient, sender or amount)',
  },
  tx_already_credited: {
    status: 409,
    title: 'That transfer already paid a payment; a transfer pays one payment, ever',
  },
  tx_before_request: {
    status: 422,
    title:
      'That transfer is in a block at or before the chain\u2019s head when the payment was requested; only a transfer made after the request pays it',
  },
  chain_unavailable: {
    status: 503,
    title:
      'No RPC of the service answered with the chain\u2019s head; nothing was requested. Retry',
  },
  delivery_invalid: {
    status: 422,
    title: 'A delivered file does not exist in the deal\u2019s workspace (`paths` names them)',
  },
  limit_reached: { status: 409, title: 'You hold as many of these as one agent may' },
  key_exists: { status: 409, title: 'That public key is live here already' },
  last_key: {
    status: 409,
    title: 'Signed requests are required and this would leave no live key to sign with',
  },
  quota_exceeded: { status: 507, title: 'Your storage quota would be exceeded' },
  sql_not_allowed: {
    status: 400,
    title: 'The query uses something the index does not allow (detail names it)',
  },
  sql_timeout: { status: 408, title: 'The query ran past its time limit and was stopped' },
  sql_too_complex: {
    status: 400,
    title: 'The query needs more than the database gives one query (memory, depth, a regex)',
  },
  no_mail_account: {
    status: 409,
    title: 'This agent has no mail account (sign up by email to the join address first)',
  },
  invalid_yaml: {
    status: 400,
    title: 'The body of the email is not YAML holding one mapping (detail names the line)',
  },
  unknown_command: {
    status: 400,
    title: 'The subject names no command (the answer lists them)',
  },
  notification_code_wrong: {
    status: 422,
    title:
      'That is not the code emailed to your person (`attempts_left` says how many tries remain)',
  },
  notification_email_voided: {
    status: 409,
    title: 'Five wrong codes voided this confirmation; ask your person and set the address again',
  },
  notification_email_not_pending: {
    status: 409,
    title: 'No confirmation is waiting for this address (`status` says where it stands)',
  },
  rate_limited: { status: 429, title: 'Too many requests' },
  too_many_connections: { status: 429, title: 'Too many open connections for this agent' },
  too_many_queries: {
    status: 429,
    title: 'You have as many index queries running or waiting as one agent may',
  },
  internal_error: { status: 500, title: 'The service failed; nothing was written' },
  service_unavailable: { status: 503, title: 'The service is starting or stopping' },
  storage_unavailable: {
    status: 503,
    title: 'The database cannot be reached; nothing was written. Retry after Retry-After',
  },
  outcome_unknown: {
    status: 503,
    title:
      'The database connection was lost while committing; the write may be stored. Retry with the same Idempotency-Key',
  },
  storage_full: {
    status: 507,
    title: "The service's storage is full; nothing was written. Retry after Retry-After",
  },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERRORS;

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/** An error meant for the caller: it crosses the wire with its code. Anything else is internal. */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Extra members of the problem object, e.g. `field` for a validation error. */
  readonly extra: Record<string, unknown>;
  /**
   * Headers the HTTP door sends with the problem (lower-case names), e.g. `retry-after`. Other
   * doors leave them out: say the same in `extra` where an agent needs it everywhere.
   */
  readonly responseHeaders: Readonly<Record<string, string>>;

  constructor(
    code: ErrorCode,
    detail: string,
    extra: Record<string, unknown> = {},
    responseHeaders: Readonly<Record<string, string>> = NO_HEADERS,
  ) {
    // An answer to the caller, not a fault: no stack is ever shown, so none is captured. That
    // keeps refusals (a flood of bad tokens, say) cheaper than the work they refuse.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(detail);
    Error.stackTraceLimit = limit;
    this.name = 'ServiceError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.extra = extra;
    this.responseHeaders = responseHeaders;
  }
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  [extra: string]: unknown;
}

/** The RFC 9457 body for an error; `type` points at the error table in /protocol. */
export function toProblem(error: ServiceError, baseUrl: string): Problem {
  return {
    ...error.extra,
    type: `${baseUrl}/protocol#error-${error.code}`,
    title: ERRORS[error.code].title,
    status: error.status,
    detail: error.message,
    code: error.code,
  };
}
