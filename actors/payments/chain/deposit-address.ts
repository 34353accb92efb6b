/**
 * A payment's deposit address: where USDC can be sent from any wallet or exchange without the
 * service holding a key. It is the CREATE2 address at which ForwarderFactory (FORWARDER_FACTORY_ADDRESS)
 * deploys Forwarder(token, payee) for the payment's salt, so it can be computed, shown and paid
 * before anything is deployed there, and whatever arrives can only ever be swept to that payee.
 * The factory's own `addressOf(token, payee, salt)` computes the same address on-chain.
 */
import {
  encodeAbiParameters,
  getAddress,
  getContractAddress,
  keccak256,
  toHex,
  type Address,
  type Hex,
} from 'viem';
import artifacts from '../contracts/artifacts.json' with { type: 'json' };

/** The Forwarder's creation bytecode, as the factory embeds it (same compilation, build.ts). */
const FORWARDER_BYTECODE = artifacts.Forwarder.bytecode as Hex;

export interface Deposit {
  factory: Address;
  token: Address;
  payee: Address;
  paymentId: string;
}

/**
 * The CREATE2 salt of a payment: keccak-256 of the UTF-8 text of its id in canonical lower-case
 * form ("0f8e…-…"), the form PostgreSQL prints, so anyone can recompute it from the id alone
 * (`cast keccak <payment_id>`). One salt per payment, so one address per payment.
 */
export function depositSalt(paymentId: string): Hex {
  return keccak256(toHex(paymentId.toLowerCase()));
}

/** The deposit address (EIP-55) of a payment of `token` to `payee` made through `factory`. */
export function depositAddress({ factory, token, payee, paymentId }: Deposit): Address {
  const args = encodeAbiParameters(
    [{ type: 'address' }, { type: 'address' }],
    [getAddress(token), getAddress(payee)],
  );
  return getContractAddress({
    opcode: 'CREATE2',
    from: getAddress(factory),
    salt: depositSalt(paymentId),
    bytecode: `${FORWARDER_BYTECODE}${args.slice(2)}`,
  });
}
