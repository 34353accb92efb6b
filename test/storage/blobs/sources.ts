/** Byte sources for blob tests: async iterables of chunks, as an HTTP body would arrive. */

/** `bytes` in chunks of `size` (the last one shorter). */
export async function* chunksOf(bytes: Uint8Array, size = 16 * 1024): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

/** Yields `before` chunks, then calls `stop` and waits for ever, like a client gone silent. */
export async function* stallingAfter(
  chunks: Uint8Array[],
  stop: () => void,
): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield chunk;
  stop();
  await new Promise(() => undefined);
}

/** Yields `chunks`, then fails with `error`, like a connection dropped mid-upload. */
export async function* failingAfter(
  chunks: Uint8Array[],
  error: Error,
): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield chunk;
  throw error;
}

export async function readAll(content: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const chunk of content) parts.push(chunk);
  return Buffer.concat(parts);
}
