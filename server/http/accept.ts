/**
 * `Accept` negotiation between the two representations an operation may offer: JSON and
 * markdown. Each is weighed by the most specific media range that matches it (`text/markdown`
 * over `text/*` over `*\/*`, RFC 9110 §12.5.1); the heavier wins, a tie goes to the
 * operation's preference, and a representation weighed 0 (or matched by nothing) is not
 * acceptable. No header, or an empty one, takes the preference.
 */
export function negotiateFormat(
  accept: string | undefined,
  prefer: 'json' | 'markdown',
): 'json' | 'markdown' | null {
  if (accept === undefined || accept.trim() === '') return prefer;
  const json = { specificity: 0, q: 0 };
  const markdown = { specificity: 0, q: 0 };
  for (const part of accept.split(',')) {
    const [range = '', ...parameters] = part.split(';');
    const type = range.trim().toLowerCase();
    let q = 1;
    for (const parameter of parameters) {
      const [name = '', value = ''] = parameter.split('=');
      if (name.trim().toLowerCase() !== 'q') continue;
      q = Number(value.trim());
      if (!Number.isFinite(q) || q < 0 || q > 1) q = 0;
    }
    weigh(json, type, 'application', 'json', q);
    weigh(markdown, type, 'text', 'markdown', q);
  }
  if (json.q === 0 && markdown.q === 0) return null;
  if (json.q === markdown.q) return prefer;
  return json.q > markdown.q ? 'json' : 'markdown';
}

function weigh(
  best: { specificity: number; q: number },
  range: string,
  type: string,
  subtype: string,
  q: number,
): void {
  const specificity =
    range === `${type}/${subtype}` ? 3 : range === `${type}/*` ? 2 : range === '*/*' ? 1 : 0;
  if (specificity > best.specificity) {
    best.specificity = specificity;
    best.q = q;
  }
}
