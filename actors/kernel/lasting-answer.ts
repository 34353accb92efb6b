/**
 * Answers a handler hands out again and again, unchanged (`whoami` while nothing it shows has
 * changed): the door serialises such an answer once and keeps the text beside it, for as long
 * as the answer object lives. A lasting answer must never be changed after it is marked.
 */
const texts = new WeakMap<object, string | null>();

/** Marks `answer` as lasting; returns it. */
export function lasting<T extends object>(answer: T): T {
  if (!texts.has(answer)) texts.set(answer, null);
  return answer;
}

/** The JSON text of `body`: made once for a lasting answer, each time for any other. */
export function jsonText(body: unknown): string {
  if (typeof body !== 'object' || body === null) return JSON.stringify(body);
  const known = texts.get(body);
  if (known === undefined) return JSON.stringify(body);
  if (known !== null) return known;
  const text = JSON.stringify(body);
  texts.set(body, text);
  return text;
}
