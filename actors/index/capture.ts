import { readHeaderOffLoop } from './header-thread.ts';
import {
  headerOverBounds,
  measureHeader,
  readHeader,
  type HeaderReading,
  type HeaderShape,
} from './yaml-header.ts';

/**
 * What the index keeps of a markdown file with a YAML header (`---` ... `---`): the header as
 * fields (each key one field) and the markdown after it. A header that cannot be read, or that
 * passes the bounds of yaml-header.ts (64 KiB, 1,000 top-level keys, nesting, anchors, aliases,
 * tags, and what it expands to with its aliases resolved: 100,000 values, 256 KiB of fields as
 * JSON) or the header thread's deadline, leaves an index error on the file, never a failed save.
 */

/** Markdown past this is saved but not indexed (its error says so). */
export const INDEX_MAX_BYTES = 1024 * 1024;

/**
 * Headers this small and this plain are read on the event loop, where a listing's header takes
 * tens of microseconds and a trip to the header thread would cost more; every other one (up to
 * 64 KiB, tens of milliseconds) is read on the header thread, so no save holds the loop. Size
 * alone is not enough: parsing costs by the node (4 KiB of `- - - -` is 2,000), and aliases cost
 * by what they point at.
 */
const INLINE_HEADER = { bytes: 4 * 1024, indicators: 128, references: 16 };

function readsInline(shape: HeaderShape): boolean {
  return (
    shape.bytes <= INLINE_HEADER.bytes &&
    shape.indicators <= INLINE_HEADER.indicators &&
    shape.references <= INLINE_HEADER.references
  );
}

export type IndexEntry =
  { fields: Record<string, unknown>; body: string; convention: string | null } | { error: string };

const HEADER = /^---\r?\n([\s\S]*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/;

/** Whether a path's bytes are markdown that starts with a YAML header (from its first bytes). */
export function hasYamlHeader(path: string, head: Uint8Array): boolean {
  return /\.md$/i.test(path) && /^---\r?\n/.test(Buffer.from(head).toString('latin1'));
}

/**
 * Reads a markdown file's header and body. `bytes` holds the whole file, or more than the cap.
 * A header past the bounds answers at once, a small plain one is read here, any other on the header
 * thread.
 */
export async function indexEntry(bytes: Uint8Array, size: number): Promise<IndexEntry> {
  const split = splitHeader(bytes, size);
  if ('error' in split) return split;
  const reading = readsInline(split.shape)
    ? readHeader(split.source)
    : await readHeaderOffLoop(split.source);
  return entryOf(reading, split.body);
}

/**
 * Watches a file's bytes go by on their way to the blob store and keeps what the index reads:
 * the first bytes of any file (is it markdown with a YAML header?), and a markdown file whole,
 * up to the index's cap. Its `finish` is the file's entry (read off the loop), or null when the
 * file is not markdown with a YAML header.
 */
export class IndexCapture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private readonly wanted: number;

  constructor(private readonly path: string) {
    this.wanted = /\.md$/i.test(path) ? INDEX_MAX_BYTES + 1 : 5;
  }

  see(chunk: Uint8Array): void {
    const want = this.wanted - this.kept;
    if (want <= 0) return;
    const part = Buffer.from(chunk.subarray(0, want));
    this.chunks.push(part);
    this.kept += part.length;
  }

  async finish(stored: { size: number }): Promise<IndexEntry | null> {
    const bytes = Buffer.concat(this.chunks);
    const header = hasYamlHeader(this.path, bytes.subarray(0, 5));
    return header ? indexEntry(bytes, stored.size) : null;
  }
}

/**
 * The same reading, all of it on the calling thread (still within the bounds): for fixtures and
 * benchmarks that build listings they know to be small.
 */
export function indexEntryHere(bytes: Uint8Array, size: number): IndexEntry {
  const split = splitHeader(bytes, size);
  return 'error' in split ? split : entryOf(readHeader(split.source), split.body);
}

/** The header's source and the body, or why the file is not read: all of it linear and cheap. */
function splitHeader(
  bytes: Uint8Array,
  size: number,
): { source: string; shape: HeaderShape; body: string } | { error: string } {
  if (size > INDEX_MAX_BYTES) {
    return { error: `The file is larger than the index reads (${INDEX_MAX_BYTES} bytes).` };
  }
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  const match = HEADER.exec(text);
  if (!match) return { error: 'The YAML header is not closed by a line `---`.' };
  const source = match[1] as string;
  const shape = measureHeader(source);
  const over = headerOverBounds(shape);
  return over ? { error: over } : { source, shape, body: text.slice(match[0].length) };
}

function entryOf(reading: HeaderReading, body: string): IndexEntry {
  if ('error' in reading) return reading;
  const { fields } = reading;
  const convention = typeof fields.convention === 'string' ? fields.convention : null;
  return { fields, body, convention };
}
