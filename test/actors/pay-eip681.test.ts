import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { eip681Link } from '../../actors/payments/pay/eip681.ts';
import { BASE_USDC, DEPOSIT_ADDRESS, samplePayView } from '../helpers/pay-view.ts';

const test = suite('the EIP-681 payment link');

test('it calls the token’s transfer with the recipient and the amount in units, on the chain', () => {
  assert.is(
    eip681Link(samplePayView()),
    `ethereum:${BASE_USDC}@8453/transfer?address=${DEPOSIT_ADDRESS}&uint256=12500000`,
  );
});

test('the largest amount is written as plain digits, never in exponent form', () => {
  const link = eip681Link(samplePayView({ amount_units: 999_999_999_999_999_999n }));
  assert.ok(link.endsWith('&uint256=999999999999999999'), link);
});

test('without a deposit address the link pays the payee’s address', () => {
  const view = samplePayView({ deposit_address: null });
  assert.ok(eip681Link(view).includes(`?address=${view.payee_address}&`));
});

test('it refuses what is no address, no chain or no amount, so nothing else enters the link', () => {
  const view = samplePayView();
  for (const bad of [
    { token_address: 'USDC' },
    { pay_to: `${DEPOSIT_ADDRESS}&uint256=1` },
    { pay_to: '0x1234' },
    { chain_id: 0 },
    { chain_id: 1.5 },
    { amount_units: 0n },
    { amount_units: -1n },
  ]) {
    assert.throws(
      () => eip681Link({ ...view, ...bad }),
      undefined,
      JSON.stringify(bad, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)),
    );
  }
});

test.run();
