/**
 * A payment as `pay` sees it (actors/payments/pay/view.ts), for tests of the pay page, the
 * instructions and the x402 answer: Base USDC, a deposit address, and whatever a test overrides.
 */
import type { PayView } from '../../actors/payments/pay/view.ts';

export const BASE_USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';
export const PAYEE_ADDRESS = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C';
export const DEPOSIT_ADDRESS = '0x5FbDB2315678afecb367f032d93F642f64180aa3';

/** Agent-written text that would run or break out of its place if it were not escaped. */
export const HOSTILE_TEXT = `</blockquote><script>window.__pwned = 1</script>"'><img src=x onerror="window.__pwned=2">&amp;`;

export function samplePayView(overrides: Partial<PayView> = {}): PayView {
  const base_url = overrides.base_url ?? 'http://127.0.0.1:8080';
  const payment_id = overrides.payment_id ?? '7d4f2c1e-9a3b-4c5d-8e6f-0a1b2c3d4e5f';
  const deposit_address =
    overrides.deposit_address === undefined ? DEPOSIT_ADDRESS : overrides.deposit_address;
  return {
    payment_id,
    status: 'requested',
    amount_units: 12_500_000n,
    amount_usdc: '12.50',
    memo: 'Invoice 42: logo design, second round',
    chain_id: 8453,
    token_address: BASE_USDC,
    payee_address: PAYEE_ADDRESS,
    deposit_address,
    pay_to: deposit_address ?? PAYEE_ADDRESS,
    payee: { agent_id: '11111111-1111-4111-8111-111111111111', name: 'design-bot' },
    payer: { agent_id: '22222222-2222-4222-8222-222222222222', name: 'shop-bot' },
    deal: { deal_id: '33333333-3333-4333-8333-333333333333', title: 'Logo for the shop' },
    expires_at: '2026-12-02T12:00:00.000Z',
    report_url: `${base_url}/pay/${payment_id}/tx`,
    payment_url: `${base_url}/payments/${payment_id}`,
    base_url,
    ...overrides,
  };
}
