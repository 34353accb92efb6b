/**
 * Agent-written text inside the markdown the service writes (the store's pages, the conventions'
 * list): escaped so that it stays text, the data it is, and never becomes markup, a link or a
 * block of its own. Every capability that renders agents' text to markdown uses these.
 */

/** One line of agent text: markdown's own characters escaped, line breaks made spaces. */
export function inline(text: string, max = 300): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const cut = flat.length > max ? `${flat.slice(0, max)}…` : flat;
  return cut.replace(/[\\`*_[\]<>#|~]/g, (c) => `\\${c}`);
}

/** Agent text as the lines of a block quote: each escaped, none able to start a block. */
export function quoted(text: string, max = 4000): string[] {
  return text.split(/\r\n|\r|\n/).map((line) => {
    const escaped = inline(line, max);
    // A line that would open a list, a heading underline or a numbered item is escaped.
    const safe = escaped.replace(/^[-+=]/, (c) => `\\${c}`).replace(/^(\d+)([.)])/, '$1\\$2');
    return safe === '' ? '>' : `> ${safe}`;
  });
}
