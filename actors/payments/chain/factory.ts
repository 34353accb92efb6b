/**
 * Where the ForwarderFactory lives: at one address on every EVM chain, the CREATE2 address of
 * its creation bytecode (artifacts.json) made by the deterministic deployment proxy with a zero
 * salt. The proxy (github.com/Arachnid/deterministic-deployment-proxy) is at the same address on
 * Base, Ethereum and most chains, and in anvil by default. So the service knows every payment's
 * deposit address offline, on any chain, before anything of ours is deployed there; the
 * factory can only ever be this contract at that address, and anyone with gas deploys it
 * (`npm run sweep`, or the first sweep through `deployFactory`).
 */
import {
  concat,
  getAddress,
  getContractAddress,
  zeroHash,
  type Address,
  type Chain,
  type Hash,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
  type Account,
} from 'viem';
import artifacts from '../contracts/artifacts.json' with { type: 'json' };

/** The deterministic deployment proxy: CREATE2 of whatever follows a 32-byte salt in calldata. */
export const DEPLOYMENT_PROXY: Address = getAddress('0x4e59b44847b379578588920ca78fbf26c0b4956c');

/** The salt the factory is deployed with through the proxy: zero, so anyone reaches the same address. */
const FACTORY_SALT: Hex = zeroHash;

const FACTORY_BYTECODE = artifacts.ForwarderFactory.bytecode as Hex;

/** The ForwarderFactory's address on every chain where the proxy deploys it. */
export const DETERMINISTIC_FACTORY: Address = getContractAddress({
  opcode: 'CREATE2',
  from: DEPLOYMENT_PROXY,
  salt: FACTORY_SALT,
  bytecode: FACTORY_BYTECODE,
});

/** What is deployed where the factory and the proxy belong, on one chain. */
export interface FactoryPresence {
  factoryDeployed: boolean;
  proxyDeployed: boolean;
}

export async function factoryPresence(
  client: Pick<PublicClient, 'getCode'>,
  factory: Address = DETERMINISTIC_FACTORY,
): Promise<FactoryPresence> {
  const [factoryCode, proxyCode] = await Promise.all([
    client.getCode({ address: factory }),
    client.getCode({ address: DEPLOYMENT_PROXY }),
  ]);
  return { factoryDeployed: hasCode(factoryCode), proxyDeployed: hasCode(proxyCode) };
}

function hasCode(code: Hex | undefined): boolean {
  return code !== undefined && code !== '0x';
}

/**
 * Deploys the factory through the proxy unless it is there already. Answers the transaction
 * that deployed it, or null when nothing had to be sent. Throws when the chain has no proxy
 * (nothing can put the factory at its address there) or the deployment left no code.
 */
export async function deployFactory(
  wallet: WalletClient<Transport, Chain, Account>,
  client: PublicClient,
): Promise<Hash | null> {
  const before = await factoryPresence(client);
  if (before.factoryDeployed) return null;
  if (!before.proxyDeployed) {
    throw new Error(
      `chain ${await client.getChainId()} has no deterministic deployment proxy at ${DEPLOYMENT_PROXY}: the ForwarderFactory cannot be put at ${DETERMINISTIC_FACTORY} there (set FORWARDER_FACTORY_ADDRESS to a factory deployed another way, or FORWARDER_FACTORY_ADDRESS=off)`,
    );
  }
  const hash = await wallet.sendTransaction({
    to: DEPLOYMENT_PROXY,
    data: concat([FACTORY_SALT, FACTORY_BYTECODE]),
  });
  const receipt = await client.waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success' || !(await factoryPresence(client)).factoryDeployed) {
    throw new Error(
      `the deployment of the ForwarderFactory (${hash}) left no code at ${DETERMINISTIC_FACTORY}`,
    );
  }
  return hash;
}
