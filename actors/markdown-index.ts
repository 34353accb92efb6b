import { parseDocument } from 'yaml';

/**
 * What the index keeps of a markdown file with a YAML header (`---` ... `---`): the header as
 * fields (each key one field) and the markdown after it. A header that cannot be read leaves an
 * index error on the file, never a failed save.
 */

/** Markdown past this is saved but not indexed (its error says so). */
export const INDEX_MAX_BYTES = 1024 * 1024;

export type IndexEntry =
  { fields: Record<string, unknown>; body: string; convention: string | null } | { error: string };

const HEADER = /^---\r?\n([\s\S]*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/;

/** Whether a path's bytes are markdown that starts with a YAML header (from its first bytes). */
export function hasYamlHeader(path: string, head: Uint8Array): boolean {
  return /\.md$/i.test(path) && /^---\r?\n/.test(Buffer.from(head).toString('latin1'));
}

/** Reads a markdown file's header and body. `bytes` holds the whole file, or more than the cap. */
export function indexEntry(bytes: Uint8Array, size: number): IndexEntry {
  if (size > INDEX_MAX_BYTES) {
    return { error: `The file is larger than the index reads (${INDEX_MAX_BYTES} bytes).` };
  }
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  const match = HEADER.exec(text);
  if (!match) return { error: 'The YAML header is not closed by a line `---`.' };
  const document = parseDocument(match[1] as string, { uniqueKeys: true, prettyErrors: true });
  if (document.errors.length > 0) {
    return { error: `The YAML header is not valid: ${firstLine(document.errors[0]?.message)}` };
  }
  let header: unknown;
  try {
    header = document.toJS({ maxAliasCount: 100 });
  } catch (error) {
    return { error: `The YAML header is not valid: ${firstLine((error as Error).message)}` };
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) {
    return { error: 'The YAML header must be a mapping of keys to values (`key: value` lines).' };
  }
  const fields = JSON.parse(JSON.stringify(header)) as Record<string, unknown>;
  const convention = typeof fields.convention === 'string' ? fields.convention : null;
  return { fields, body: text.slice(match[0].length), convention };
}

function firstLine(message: string | undefined): string {
  return (message ?? 'unreadable').split('\n')[0] as string;
}
