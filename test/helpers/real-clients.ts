/**
 * Suites that drive a real third-party client installed outside npm (rclone, the Python Azure
 * SDK, python-socketio). Where the program is missing the suite does not run, and the runner says
 * which suites were skipped and what to install; under REQUIRE_CLIENTS=1 (set by `.ci/run`, which
 * installs them) each skipped suite counts as failed, so a client test never goes quiet.
 */
import { spawnSync } from 'node:child_process';
import { suite, type Test } from 'uvu';

/** A program a suite needs: how to probe it, and the Debian package that provides it. */
export interface ExternalClient {
  /** What the runner prints, e.g. "rclone". */
  readonly name: string;
  /** A command that exits 0 when the client is usable, e.g. ["rclone", "version"]. */
  readonly probe: readonly [string, ...string[]];
  /** The Debian package(s) to install, e.g. "rclone". */
  readonly debian: string;
}

export const RCLONE: ExternalClient = {
  name: 'rclone',
  probe: ['rclone', 'version'],
  debian: 'rclone',
};

/** Debian's Python (not a pyenv one), with the azure-storage-blob v12 SDK. */
export const PYTHON_AZURE: ExternalClient = {
  name: 'Python azure-storage-blob',
  probe: ['/usr/bin/python3', '-c', 'import azure.storage.blob'],
  debian: 'python3-azure python3-azure-storage',
};

export const PYTHON_SOCKETIO: ExternalClient = {
  name: 'python-socketio',
  probe: ['/usr/bin/python3', '-c', 'import socketio'],
  debian: 'python3-socketio',
};

/** Debian's Azure CLI (`az`), whose `az storage blob` commands speak to storage links. */
export const AZURE_CLI: ExternalClient = {
  name: 'Azure CLI (az)',
  probe: ['az', 'version'],
  debian: 'azure-cli',
};

/** Debian's swaks, an SMTP client independent of the service's own mail code. */
export const SWAKS: ExternalClient = {
  name: 'swaks',
  probe: ['swaks', '--version'],
  debian: 'swaks',
};

/** Debian's haproxy, the proxy deploy/ puts in front of the service processes. */
export const HAPROXY: ExternalClient = {
  name: 'haproxy',
  probe: ['/usr/sbin/haproxy', '-v'],
  debian: 'haproxy',
};

const skippedClientSuites: string[] = [];

/** Suites declared with clientSuite that did not run because their client is not installed. */
export function clientSuitesSkipped(): readonly string[] {
  return skippedClientSuites;
}

const probed = new Map<ExternalClient, boolean>();

/** Whether the client's probe command runs and exits 0 (asked once per run). */
export function clientInstalled(client: ExternalClient): boolean {
  let installed = probed.get(client);
  if (installed === undefined) {
    const [command, ...args] = client.probe;
    const result = spawnSync(command, args, { stdio: 'ignore', timeout: 30_000 });
    installed = result.status === 0;
    probed.set(client, installed);
  }
  return installed;
}

/**
 * A uvu suite that needs the given clients. When one is missing its `run()` does nothing and the
 * runner reports it as skipped, naming the Debian package to install.
 */
export function clientSuite<T = Record<string, unknown>>(
  name: string,
  ...clients: ExternalClient[]
): Test<T> {
  const test = suite<T>(name);
  const missing = clients.filter((client) => !clientInstalled(client));
  if (missing.length > 0) {
    skippedClientSuites.push(
      `${name}: ${missing.map((c) => `${c.name} (apt-get install ${c.debian})`).join(', ')}`,
    );
    test.run = () => undefined;
  }
  return test;
}
