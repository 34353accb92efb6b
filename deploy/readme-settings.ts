/**
 * README.md's "Configuration" table, made from what the code declares: the doors' and the
 * kernel's variables (server/config.ts), each capability's (actors/<capability>/settings.ts),
 * `npm run chain`'s, and a JOB_SCHEDULE_<NAME> row for each scheduled job of the capabilities.
 * `npm run readme:settings` writes it between its markers; test/lint/readme-settings.test.ts
 * fails while the README's table differs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CAPABILITIES } from '../actors/capabilities.ts';
import type { SettingRow } from '../actors/kernel/settings.ts';
import { JOB_SCHEDULE_PREFIX, SERVICE_SETTINGS } from '../server/config.ts';
import { LOCAL_CHAIN_SETTINGS } from './local-chain.ts';

export const README = join(import.meta.dirname, '../README.md');
export const BEGIN = '<!-- settings: made by npm run readme:settings from the code -->';
export const END = '<!-- settings: end -->';

/** Every row, in order: the service's, the capabilities' (in the list's order), the tools', the jobs'. */
export function settingRows(): SettingRow[] {
  return [
    ...SERVICE_SETTINGS,
    ...CAPABILITIES.flatMap((capability) => capability.settings?.rows ?? []),
    ...LOCAL_CHAIN_SETTINGS,
    ...CAPABILITIES.flatMap((capability) => capability.jobs ?? []).map((job) => ({
      variables: [`${JOB_SCHEDULE_PREFIX}${job.name.toUpperCase().replace(/\./g, '_')}`],
      default: `\`${job.schedule}\``,
      meaning: job.purpose,
    })),
  ];
}

/** The rows as a Markdown table, its columns padded as Prettier pads them. */
export function settingsTable(rows: SettingRow[] = settingRows()): string {
  const cells = [
    ['variable', 'default', 'meaning'],
    ...rows.map((row) => [
      row.variables.map((variable) => `\`${variable}\``).join(' / '),
      row.default,
      row.meaning,
    ]),
  ];
  const widths = [0, 1, 2].map((column) =>
    Math.max(...cells.map((line) => [...(line[column] as string)].length)),
  );
  const line = (values: string[]) =>
    `| ${values.map((value, i) => value + ' '.repeat((widths[i] as number) - [...value].length)).join(' | ')} |`;
  const [head, ...body] = cells as [string[], ...string[][]];
  return [line(head), line(widths.map((width) => '-'.repeat(width))), ...body.map(line)].join('\n');
}

/** The README with its table as the code declares it. */
export function readmeWithSettings(readme: string): string {
  const begin = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`README.md has no ${BEGIN} ... ${END} section`);
  return `${readme.slice(0, begin + BEGIN.length)}\n\n${settingsTable()}\n\n${readme.slice(end)}`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(README, readmeWithSettings(readFileSync(README, 'utf8')));
  process.stderr.write(`README.md: ${settingRows().length} rows of settings written\n`);
}
