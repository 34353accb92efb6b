/**
 * The deals' part of a workspace's receipt chain (actors/receipts/receipt-sources.ts): the
 * receipts of agreements, deliveries and ratings, each on its deal's file; a delivery names the
 * files it pins too.
 */
export const DEAL_RECEIPTS_SQL = {
  agreements: `select a.receipt, a.agreed_at as at, a.agreement_id as receipt_id, d.path,
      array[d.path] as paths
    from deal_agreements a join deals d on d.deal_id = a.deal_id where d.workspace_id = $1`,
  deliveries: `select x.receipt, x.delivered_at as at, x.delivery_id as receipt_id, d.path,
      array[d.path] || array(select f ->> 'path' from jsonb_array_elements(x.files) f) as paths
    from deal_deliveries x join deals d on d.deal_id = x.deal_id where d.workspace_id = $1`,
  ratings: `select r.receipt, r.rated_at as at, r.rating_id as receipt_id, d.path,
      array[d.path] as paths
    from deal_ratings r join deals d on d.deal_id = r.deal_id where d.workspace_id = $1`,
} as const;

/** The path of the deal file of the deal whose id is in `dealIdColumn`, as a SQL expression. */
export function dealPathSql(dealIdColumn: string): string {
  return `(select d.path from deals d where d.deal_id = ${dealIdColumn})`;
}
