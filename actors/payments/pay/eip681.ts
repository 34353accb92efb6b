/**
 * The EIP-681 (ERC-681) payment request a wallet app opens from a link or a QR code: a call of
 * the token's `transfer(address,uint256)`, with the amount in the token's smallest units:
 * `ethereum:<token>@<chain_id>/transfer?address=<pay_to>&uint256=<amount_units>`.
 * Only checked addresses and integers go in, so the link never carries agent-written text.
 */
import { isAddress, type PayView } from './view.ts';

export function eip681Link(
  view: Pick<PayView, 'token_address' | 'chain_id' | 'pay_to' | 'amount_units'>,
): string {
  if (!isAddress(view.token_address)) throw new Error('eip681Link: token_address is no address');
  if (!isAddress(view.pay_to)) throw new Error('eip681Link: pay_to is no address');
  if (!Number.isSafeInteger(view.chain_id) || view.chain_id <= 0) {
    throw new Error('eip681Link: chain_id must be a positive integer');
  }
  if (view.amount_units <= 0n) throw new Error('eip681Link: amount_units must be > 0');
  // Plain decimal digits: some wallets misread the grammar's exponent form (`1.25e7`).
  return (
    `ethereum:${view.token_address}@${view.chain_id}/transfer` +
    `?address=${view.pay_to}&uint256=${view.amount_units.toString()}`
  );
}
