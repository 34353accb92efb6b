import type { Queryable } from '../driver.ts';

/**
 * Signed x402 payments the service took for a payment (migrations/045_x402_authorizations.sql),
 * keyed by what the token allows once: a nonce of one signer on one token of one chain.
 */

export interface AuthorizationRow {
  chainId: number;
  /** Lower-case hex, as every address here. */
  tokenAddress: string;
  fromAddress: string;
  nonce: string;
  paymentId: string;
  toAddress: string;
  valueUnits: bigint;
  validAfter: bigint;
  validBefore: bigint;
  signature: string;
  x402Version: 1 | 2;
  receivedAt: Date;
  /** The transaction a facilitator settled it in; null before (or when none did). */
  settledTxHash: string | null;
  /** Why a facilitator did not settle it; null when it did or none was asked. */
  settleError: string | null;
}

/** What `claimAuthorization` found: kept now, already kept (the same one again), or refused. */
export type Claim =
  | { kind: 'kept'; row: AuthorizationRow }
  | { kind: 'same'; row: AuthorizationRow }
  | { kind: 'nonce_used' }
  | { kind: 'already_authorized'; row: AuthorizationRow };

interface Stored extends Record<string, unknown> {
  chain_id: number | string;
  token_address: string;
  from_address: string;
  nonce: string;
  payment_id: string;
  to_address: string;
  value_units: number | string | bigint;
  valid_after: number | string | bigint;
  valid_before: number | string | bigint;
  signature: string;
  x402_version: number;
  received_at: Date;
  settled_tx_hash: string | null;
  settle_error: string | null;
}

const COLUMNS = `chain_id, token_address, from_address, nonce, payment_id, to_address, value_units,
  valid_after, valid_before, signature, x402_version, received_at, settled_tx_hash, settle_error`;

function fromStored(row: Stored): AuthorizationRow {
  return {
    chainId: Number(row.chain_id),
    tokenAddress: row.token_address,
    fromAddress: row.from_address,
    nonce: row.nonce,
    paymentId: row.payment_id,
    toAddress: row.to_address,
    valueUnits: BigInt(row.value_units),
    validAfter: BigInt(row.valid_after),
    validBefore: BigInt(row.valid_before),
    signature: row.signature,
    x402Version: row.x402_version === 1 ? 1 : 2,
    receivedAt: row.received_at,
    settledTxHash: row.settled_tx_hash,
    settleError: row.settle_error,
  };
}

/**
 * Keeps `row` for its payment, in `tx` (a transaction): the payment's row is locked first, so
 * two authorizations sent at once for one payment are taken one after the other. The same
 * authorization again (its nonce, for the same payment, with the same signature) is `same`;
 * its nonce kept for anything else is `nonce_used`; another authorization while this payment
 * holds one not yet expired at `nowSeconds` is `already_authorized`, so no payer can be made
 * to pay a payment twice by a payee that submits both.
 */
export async function claimAuthorization(
  tx: Queryable,
  row: AuthorizationRow,
  nowSeconds: bigint,
): Promise<Claim> {
  await tx.query('select 1 from payments where payment_id = $1 for update', [row.paymentId]);
  const [taken] = await tx.query<Stored>(
    `select ${COLUMNS} from x402_authorizations
     where chain_id = $1 and token_address = $2 and from_address = $3 and nonce = $4`,
    [row.chainId, row.tokenAddress, row.fromAddress, row.nonce],
  );
  if (taken) {
    const same =
      taken.payment_id === row.paymentId && taken.signature === row.signature.toLowerCase();
    return same ? { kind: 'same', row: fromStored(taken) } : { kind: 'nonce_used' };
  }
  const [live] = await tx.query<Stored>(
    `select ${COLUMNS} from x402_authorizations
     where payment_id = $1 and valid_before > $2
     order by received_at desc limit 1`,
    [row.paymentId, nowSeconds.toString()],
  );
  if (live) return { kind: 'already_authorized', row: fromStored(live) };
  await tx.query(
    `insert into x402_authorizations (${COLUMNS})
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, null, null)`,
    [
      row.chainId,
      row.tokenAddress,
      row.fromAddress,
      row.nonce,
      row.paymentId,
      row.toAddress,
      row.valueUnits.toString(),
      row.validAfter.toString(),
      row.validBefore.toString(),
      row.signature.toLowerCase(),
      row.x402Version,
      row.receivedAt,
    ],
  );
  return { kind: 'kept', row };
}

/** The newest authorization kept for a payment, or null. */
export async function authorizationOf(
  db: Queryable,
  paymentId: string,
): Promise<AuthorizationRow | null> {
  const [row] = await db.query<Stored>(
    `select ${COLUMNS} from x402_authorizations where payment_id = $1
     order by received_at desc limit 1`,
    [paymentId],
  );
  return row ? fromStored(row) : null;
}

/** Notes what the facilitator did with an authorization: its transaction, or why not. */
export async function recordSettlement(
  db: Queryable,
  row: Pick<AuthorizationRow, 'chainId' | 'tokenAddress' | 'fromAddress' | 'nonce'>,
  outcome: { txHash: string } | { error: string },
): Promise<void> {
  await db.query(
    `update x402_authorizations set settled_tx_hash = $5, settle_error = $6
     where chain_id = $1 and token_address = $2 and from_address = $3 and nonce = $4`,
    [
      row.chainId,
      row.tokenAddress,
      row.fromAddress,
      row.nonce,
      'txHash' in outcome ? outcome.txHash.toLowerCase() : null,
      'error' in outcome ? outcome.error.slice(0, 500) : null,
    ],
  );
}
