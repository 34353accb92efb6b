/**
 * The files' part of a workspace's receipt chain (actors/receipts/receipt-sources.ts): the
 * receipt of each version saved or deleted, kept on its row.
 */
export const FILE_RECEIPTS_SQL = `select receipt, saved_at as at,
    (receipt ->> 'receipt_id')::uuid as receipt_id, path, array[path] as paths
  from file_versions where workspace_id = $1`;
