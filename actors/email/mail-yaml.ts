import { stringify } from 'yaml';

/**
 * A value as the YAML a mail carries. Written with the YAML 1.1 schema so that every string a
 * YAML 1.1 reader would take for something else is quoted: timestamps (PyYAML and others turn
 * `2026-01-01T00:00:00Z` into a date), `yes`/`no`/`on`/`off`, sexagesimal and octal numbers.
 * Any YAML reader, 1.1 or 1.2, reads the strings back as strings.
 */
export function mailYaml(value: unknown): string {
  return stringify(value ?? null, { lineWidth: 0, schema: 'yaml-1.1' });
}
