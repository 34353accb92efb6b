import type { Queryable } from '../driver.ts';

/** The payment watcher's place on each chain (chain_cursor): the last block it checked. */

/** The last block the watcher checked on the chain, or null before its first. */
export async function readChainCursor(db: Queryable, chainId: number): Promise<number | null> {
  const [row] = await db.query<{ last_block: number }>(
    'select last_block from chain_cursor where chain_id = $1',
    [chainId],
  );
  return row?.last_block ?? null;
}

/** Sets it (also back, when a reorg makes the watcher read blocks again). */
export async function writeChainCursor(
  tx: Queryable,
  chainId: number,
  lastBlock: number,
): Promise<void> {
  await tx.query(
    `insert into chain_cursor (chain_id, last_block) values ($1, $2)
     on conflict (chain_id) do update set last_block = excluded.last_block`,
    [chainId, lastBlock],
  );
}
