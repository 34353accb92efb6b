import type { CapabilityConfig, CapabilitySettings, EnvReader } from '../kernel/settings.ts';
import { StartRefusal } from '../kernel/settings.ts';
import type { ChainSettings } from './chain/clients.ts';

declare module '../kernel/settings.ts' {
  interface CapabilityConfig {
    /**
     * The JSON-RPC endpoints payments are checked on (CHAIN_RPC_URL or CHAIN_RPC_URLS, a comma
     * list); empty: on-chain verification is off and request_payment answers 503. With several,
     * a payment is confirmed only when every one gives the same block hash.
     */
    chainRpcUrls: string[];
    chainId: number;
    /** The USDC contract (CHAIN_ID's): the only token whose transfers are credited. */
    usdcAddress: string;
    /** Blocks, the crediting one included, before a payment is confirmed. */
    confirmations: number;
    /** How often the watcher reads new blocks (ms); 0: this process runs no watcher. */
    chainPollMs: number;
    /** How long a requested payment waits for its transfer. */
    paymentExpiryHours: number;
    /**
     * The ForwarderFactory giving each payment a deposit address: undefined for the one at the
     * same address on every chain (chain/factory.ts), null for none (`off`).
     */
    forwarderFactoryAddress: string | null | undefined;
    /** How long one call to a chain RPC may take before it counts as no answer (ms). */
    chainRpcTimeoutMs: number;
    /**
     * A public JSON-RPC endpoint the pay instructions suggest to payers (`rpc_url`); unset: null.
     * Never CHAIN_RPC_URL(S), which may carry the operator's API key.
     */
    publicRpcUrl: string | undefined;
    /**
     * The x402 facilitator (its base URL: `/verify` and `/settle` under it) that signed x402
     * payments are handed to, which submits them on-chain; unset: the payee submits them.
     */
    x402FacilitatorUrl: string | undefined;
  }
}

/** Base's chain id and its USDC contract: the defaults of CHAIN_ID and USDC_ADDRESS. */
const BASE_CHAIN_ID = 8453;
export const BASE_USDC_ADDRESS = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913';

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

function evmAddress(env: EnvReader, variable: string): string | undefined {
  const text = env.text(variable);
  if (text !== undefined && !ADDRESS.test(text))
    throw new StartRefusal(
      `${variable} must be an address, 0x and 40 hex digits, not "${env.raw(variable)}"`,
    );
  return text;
}

/** FORWARDER_FACTORY_ADDRESS: unset for the deterministic factory, `off` for none, or an address. */
function factoryAddress(env: EnvReader): string | null | undefined {
  const text = env.text('FORWARDER_FACTORY_ADDRESS');
  if (text?.toLowerCase() === 'off') return null;
  if (text !== undefined && !ADDRESS.test(text)) {
    throw new StartRefusal(
      `FORWARDER_FACTORY_ADDRESS must be an address, 0x and 40 hex digits, or off, not "${env.raw('FORWARDER_FACTORY_ADDRESS')}"`,
    );
  }
  return text;
}

/** Whether text is an http(s) URL. */
function isHttpUrl(text: string): boolean {
  try {
    const protocol = new URL(text).protocol;
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

/** PUBLIC_RPC_URL: one http(s) URL, or unset. */
function publicRpcUrl(env: EnvReader): string | undefined {
  const text = env.text('PUBLIC_RPC_URL');
  if (text !== undefined && !isHttpUrl(text))
    throw new StartRefusal(
      `PUBLIC_RPC_URL takes the http(s) URL of a JSON-RPC endpoint, not "${text}"`,
    );
  return text;
}

/** X402_FACILITATOR_URL: one http(s) URL, or unset. */
function facilitatorUrl(env: EnvReader): string | undefined {
  const text = env.text('X402_FACILITATOR_URL');
  if (text !== undefined && !isHttpUrl(text))
    throw new StartRefusal(
      `X402_FACILITATOR_URL takes the http(s) base URL of an x402 facilitator, not "${text}"`,
    );
  return text;
}

/** CHAIN_RPC_URLS (a comma list) or CHAIN_RPC_URL (one), each an http(s) URL. */
function rpcUrls(env: EnvReader): string[] {
  const list = env.text('CHAIN_RPC_URLS') !== undefined;
  const variable = list ? 'CHAIN_RPC_URLS' : 'CHAIN_RPC_URL';
  const one = env.text('CHAIN_RPC_URL');
  const urls = list ? env.list('CHAIN_RPC_URLS') : one === undefined ? [] : [one];
  for (const entry of urls) {
    if (!isHttpUrl(entry))
      throw new StartRefusal(
        `${variable} takes http(s) URLs of JSON-RPC endpoints, not "${entry}"`,
      );
  }
  return urls;
}

/** What the payments capability is told of the chain (its ChainSettings, chain/clients.ts). */
export function chainSettings(config: CapabilityConfig): ChainSettings {
  return {
    rpcUrls: config.chainRpcUrls,
    chainId: config.chainId,
    usdc: config.usdcAddress,
    confirmations: config.confirmations,
    pollMs: config.chainPollMs,
    expiryMs: config.paymentExpiryHours * 3600_000,
    factory: config.forwarderFactoryAddress,
    rpcTimeoutMs: config.chainRpcTimeoutMs,
    publicRpcUrl: config.publicRpcUrl ?? null,
    facilitatorUrl: config.x402FacilitatorUrl ?? null,
  };
}

/** What the payments capability reads from the environment. */
export const paymentsSettings: CapabilitySettings = {
  rows: [
    {
      variables: ['CHAIN_RPC_URL'],
      default: 'unset',
      meaning: 'JSON-RPC endpoint payments are checked on; unset: no on-chain payments (`503`)',
    },
    {
      variables: ['CHAIN_RPC_URLS'],
      default: 'unset',
      meaning:
        'several endpoints (comma list): a payment confirms only when all agree on the block',
    },
    {
      variables: ['CHAIN_ID'],
      default: '`8453` (Base)',
      meaning: 'the chain payments are made on',
    },
    {
      variables: ['USDC_ADDRESS'],
      default: "Base's USDC",
      meaning: 'the USDC contract; transfers of any other token are never credited',
    },
    {
      variables: ['CONFIRMATIONS'],
      default: '`3`',
      meaning: 'blocks, the crediting one included, before a payment is confirmed',
    },
    {
      variables: ['CHAIN_POLL_MS'],
      default: '`2000`',
      meaning:
        'how often the payment watcher reads new blocks (ms); `0`: this process runs no watcher',
    },
    {
      variables: ['PAYMENT_EXPIRY_HOURS'],
      default: '`168`',
      meaning: 'how long a requested payment waits for its transfer (7 days)',
    },
    {
      variables: ['FORWARDER_FACTORY_ADDRESS'],
      default: 'unset',
      meaning:
        'ForwarderFactory of deposit addresses; unset: the one at one address on every chain; `off`: none',
    },
    {
      variables: ['CHAIN_RPC_TIMEOUT_MS'],
      default: '`5000`',
      meaning:
        'how long one chain RPC call may take before it counts as no answer (then: unknown, retried)',
    },
    {
      variables: ['PUBLIC_RPC_URL'],
      default: 'unset',
      meaning:
        "a public RPC the pay instructions suggest to payers (`rpc_url`); never CHAIN_RPC_URL's key",
    },
    {
      variables: ['X402_FACILITATOR_URL'],
      default: 'unset',
      meaning:
        'an x402 facilitator (`/verify`, `/settle`) that submits signed x402 payments; unset: the payee submits them',
    },
  ],
  read: (env) => ({
    chainRpcUrls: rpcUrls(env),
    chainId: env.positive('CHAIN_ID', BASE_CHAIN_ID),
    usdcAddress: evmAddress(env, 'USDC_ADDRESS') ?? BASE_USDC_ADDRESS,
    confirmations: env.positive('CONFIRMATIONS', 3),
    chainPollMs: env.integer('CHAIN_POLL_MS', 2000),
    paymentExpiryHours: env.positive('PAYMENT_EXPIRY_HOURS', 168),
    forwarderFactoryAddress: factoryAddress(env),
    chainRpcTimeoutMs: env.positive('CHAIN_RPC_TIMEOUT_MS', 5000),
    publicRpcUrl: publicRpcUrl(env),
    x402FacilitatorUrl: facilitatorUrl(env),
  }),
  services: (config) => ({ chain: chainSettings(config) }),
};
