import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type uWS from '@trufflesuite/uws-js-unofficial';

export type UWS = typeof uWS;

/** uWebSockets.js loaded, or why it cannot load on this Node.js, in words for the start-up log. */
export type UwsLoad = { uws: UWS; reason: null } | { uws: null; reason: string };

/**
 * Loads uWebSockets.js's native binary for this Node.js itself, not through the package's
 * entry point: on a Node.js it has no binary for (22 and 24: ABI 127 and 137; it ships 93, 108
 * and 115) the entry point prints a "not compatible" warning with a require stack to the console
 * and hands back a JS shim that crashes later. Here that case is a reason the caller logs in
 * one line (`HTTP_ENGINE=auto` then serves with node:http: README.md, "Configuration").
 */
export function loadUwsBinary(): UwsLoad {
  const require = createRequire(import.meta.url);
  const abi = process.versions.modules;
  const where = `Node ${process.versions.node} on ${process.platform}-${process.arch}, ABI ${abi}`;
  let binary: string;
  try {
    const packageDir = dirname(require.resolve('@trufflesuite/uws-js-unofficial/package.json'));
    binary = join(packageDir, 'binaries', `uws_${process.platform}_${process.arch}_${abi}.node`);
  } catch {
    return { uws: null, reason: 'uWebSockets.js is not installed' };
  }
  if (!existsSync(binary))
    return { uws: null, reason: `uWebSockets.js has no binary for ${where}` };
  try {
    const uws = require(binary) as UWS;
    if (typeof uws.SSLApp === 'function') return { uws, reason: null };
    return { uws: null, reason: `uWebSockets.js's binary for ${where} has no SSLApp` };
  } catch (error) {
    // A binary built against another C library, say: the loader's first line names it.
    const message = (error instanceof Error ? error.message : String(error)).split('\n')[0];
    return { uws: null, reason: `uWebSockets.js's binary for ${where} does not load: ${message}` };
  }
}
