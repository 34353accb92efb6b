import type { ServiceConfig } from './services.ts';

/**
 * Settings read from the environment. Each capability declares the variables it reads, one row
 * of README.md's "Configuration" table each, and reads them itself through an EnvReader, which
 * refuses a value it cannot read with a StartRefusal naming the variable. The doors' own
 * settings are server/config.ts's; the README's table is made from both (server/settings-table.ts).
 */

/**
 * A start the operator must fix, not a bug: a setting that cannot be read, an engine that cannot
 * load, a port that cannot be had. server/main.ts prints its message as one line and exits 1,
 * without a stack.
 */
export class StartRefusal extends Error {
  override name = 'StartRefusal';
}

/** One environment variable (or a pair read together): its row in README.md's table. */
export interface SettingRow {
  readonly variables: readonly string[];
  /** The default, as the table shows it (`unset` when there is none). */
  readonly default: string;
  readonly meaning: string;
}

/**
 * The configuration's members that capabilities read from the environment, flat, by their own
 * names (`storageQuotaBytes`, `chainRpcUrls`...). Empty here: each capability adds its members by
 * declaration merging beside its settings, so the kernel names none of them.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by merging
export interface CapabilityConfig {}

/** What a capability reads from the environment, and what it then tells its Services. */
export interface CapabilitySettings {
  readonly rows: readonly SettingRow[];
  /** Its members of the configuration, each refused with the variable's name when unreadable. */
  read(env: EnvReader): Partial<CapabilityConfig>;
  /**
   * Its members of ServiceConfig, from the whole configuration (tests override members of it)
   * and what only the running service knows.
   */
  services?(config: CapabilityConfig, running: { baseUrl: string }): Partial<ServiceConfig>;
}

/** Reads variables of one environment; each reader refuses what it cannot read. */
export class EnvReader {
  constructor(private readonly env: NodeJS.ProcessEnv) {}

  /** The value as set, or undefined when unset or empty. */
  raw(variable: string): string | undefined {
    const value = this.env[variable];
    return value === undefined || value === '' ? undefined : value;
  }

  /** The value trimmed, or undefined when unset or blank. */
  text(variable: string): string | undefined {
    return this.raw(variable)?.trim() || undefined;
  }

  /** A whole number of at least 0, or `fallback` when unset. */
  integer(variable: string, fallback: number): number {
    const value = this.raw(variable);
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0)
      throw new StartRefusal(`${variable} must be a whole number, not "${value}"`);
    return n;
  }

  /** A whole number of at least 1, or `fallback` when unset. */
  positive(variable: string, fallback: number): number {
    const n = this.integer(variable, fallback);
    if (n < 1)
      throw new StartRefusal(`${variable} must be at least 1, not "${this.raw(variable)}"`);
    return n;
  }

  /** A comma list, each entry trimmed, empty entries dropped. */
  list(variable: string): string[] {
    return (this.raw(variable) ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
  }

  /** `1` turns it on; anything else leaves it off. */
  flag(variable: string): boolean {
    return this.raw(variable) === '1';
  }

  /** Every variable set whose name begins with `prefix`, keyed by the rest of its name. */
  prefixed(prefix: string): Record<string, string> {
    const found: Record<string, string> = {};
    for (const [variable, value] of Object.entries(this.env)) {
      if (variable.startsWith(prefix) && value !== undefined && value.trim() !== '')
        found[variable.slice(prefix.length)] = value.trim();
    }
    return found;
  }
}
