/**
 * A test wallet injected into a page as `window.ethereum` (EIP-1193), answered in Node: every
 * `request({method, params})` the page makes goes through `page.exposeFunction` to `handle`,
 * which may answer from a table (the pay page's browser test) or forward to a local chain
 * (anvil, for the end-to-end payment). Throw a `WalletError` from `handle` to answer with an
 * EIP-1193 error (4001: the user declined; 4902: unknown chain); anything else thrown answers
 * -32603. Init scripts run before the page's own, and CDP puts them outside the page's CSP.
 */
import type { Page } from 'playwright-core';

export interface WalletRequest {
  method: string;
  params?: unknown[];
}

export type WalletHandler = (request: WalletRequest) => unknown;

/** An EIP-1193 provider error, as the page's `catch` sees it (`error.code`, `error.message`). */
export class WalletError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

type Answer = { result: unknown } | { error: { code: number; message: string } };

const BINDING = '__testWalletRequest';

/** Injects the wallet into every document the page opens from now on (call before `goto`). */
export async function injectWallet(page: Page, handle: WalletHandler): Promise<void> {
  await page.exposeFunction(BINDING, async (request: WalletRequest): Promise<Answer> => {
    try {
      return { result: (await handle(request)) ?? null };
    } catch (error) {
      if (error instanceof WalletError) {
        return { error: { code: error.code, message: error.message } };
      }
      return { error: { code: -32603, message: String(error) } };
    }
  });
  await page.addInitScript((binding: string) => {
    const call = (window as unknown as Record<string, (r: unknown) => Promise<Answer>>)[binding];
    const provider = {
      isTestWallet: true,
      async request(args: { method: string; params?: unknown[] }): Promise<unknown> {
        const answer = await call!({ method: args.method, params: args.params });
        if ('error' in answer) {
          throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
        }
        return answer.result;
      },
      on(): void {},
      removeListener(): void {},
    };
    Object.defineProperty(window, 'ethereum', { value: provider, configurable: true });
  }, BINDING);
}

/** A wallet that answers from fixed values and records every request, in order. */
export function recordingWallet(options: {
  account: string;
  chainId: number;
  txHash: string;
  /** The chain the wallet starts on (default: `chainId`), to make the page ask to switch. */
  startChainId?: number;
}): { requests: WalletRequest[]; handle: WalletHandler } {
  const requests: WalletRequest[] = [];
  let chainId = options.startChainId ?? options.chainId;
  const hex = (id: number): string => `0x${id.toString(16)}`;
  const handle: WalletHandler = (request) => {
    requests.push(request);
    switch (request.method) {
      case 'eth_requestAccounts':
      case 'eth_accounts':
        return [options.account];
      case 'eth_chainId':
        return hex(chainId);
      case 'wallet_switchEthereumChain': {
        const [target] = (request.params ?? []) as [{ chainId?: string }?];
        if (target?.chainId !== hex(options.chainId))
          throw new WalletError(4902, 'Unrecognized chain');
        chainId = options.chainId;
        return null;
      }
      case 'eth_sendTransaction':
        return options.txHash;
      default:
        throw new WalletError(4200, `Unsupported method ${request.method}`);
    }
  };
  return { requests, handle };
}
