/**
 * The new text of a reply: what its writer typed this time, without the quoted history and the
 * signature. A command is acted on from this text only, so a quoted earlier command (or a quoted
 * answer) never runs again, and a signature never reads as input.
 */

/** Lines that open the quoted history: everything from such a line on is dropped. */
const HISTORY_OPENERS: RegExp[] = [
  // Gmail, Apple Mail, Thunderbird, mutt: "On <date>, <name> <address> wrote:".
  /^On\s.{1,300}\swrote:\s*$/i,
  // The same in a few other languages mail programs localise it to.
  /^Am\s.{1,300}\sschrieb\s.{0,100}:\s*$/i,
  /^Le\s.{1,300}\sa\s+écrit\s*:\s*$/i,
  /^El\s.{1,300}\sescribió\s*:\s*$/i,
  // Outlook and others: "-----Original Message-----", forwarded-message banners.
  /^-{2,}\s*Original Message\s*-{2,}\s*$/i,
  /^-{2,}\s*(Forwarded|Weitergeleitete) (message|Nachricht)\s*-{2,}\s*$/i,
  /^Begin forwarded message:\s*$/i,
  // Outlook's separator line above its "From: / Sent: / To: / Subject:" block.
  /^_{20,}\s*$/,
];

/**
 * Outlook's (and Apple Mail's forwarded) header block: "From: ..." then "Sent:"/"Date:".
 * Capitalised as mail programs write them, so that YAML keys (`from: `, `to: `) never match.
 */
const HEADER_BLOCK_FROM = /^\*?(From|Von|De):\*?\s.+$/;
const HEADER_BLOCK_NEXT = /^\*?(Sent|Date|Gesendet|Envoyé|To|Subject|An|Betreff):\*?\s.*$/;

/** The signature delimiter (RFC 3676 "-- ", and the trimmed "--" many programs leave). */
const SIGNATURE = /^--\s?$/;

/** One-line signatures mobile mail programs add, dropped when they end the new text. */
const MOBILE_SIGNATURE =
  /^(Sent from my \w[\w ]{0,40}|Sent from (Mail|Outlook) for \w+|Get Outlook for \w+|Sent from Yahoo Mail.{0,40})\s*$/i;

/** The new text of a plain-text body (CRLF or LF), trimmed. */
export function newText(body: string): string {
  const lines = body.replace(/\r\n?/g, '\n').split('\n');
  const kept: string[] = [];
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!;
    if (SIGNATURE.test(line)) break;
    if (opensHistory(line, lines[index + 1], lines[index + 2])) break;
    // A quoted line (">", "> >", ">>"): history interleaved with the new text.
    if (line.startsWith('>')) continue;
    kept.push(line);
  }
  while (kept.length > 0 && kept[kept.length - 1]!.trim() === '') kept.pop();
  if (kept.length > 0 && MOBILE_SIGNATURE.test(kept[kept.length - 1]!.trim())) kept.pop();
  return kept.join('\n').trim();
}

function opensHistory(line: string, next: string | undefined, after: string | undefined): boolean {
  const trimmed = line.trim();
  if (HISTORY_OPENERS.some((opener) => opener.test(trimmed))) return true;
  // Gmail wraps a long "On ... wrote:" over two lines (the address goes to the next one).
  if (
    next !== undefined &&
    /^(On|Am|Le|El)\s/i.test(trimmed) &&
    HISTORY_OPENERS.slice(0, 4).some((opener) => opener.test(`${trimmed} ${next.trim()}`))
  )
    return true;
  return (
    HEADER_BLOCK_FROM.test(trimmed) &&
    next !== undefined &&
    HEADER_BLOCK_NEXT.test(next.trim()) &&
    after !== undefined &&
    HEADER_BLOCK_NEXT.test(after.trim())
  );
}

/** Reply and forward prefixes, in the languages mail programs write them (Re, Fwd, AW, SV...). */
const SUBJECT_PREFIX = /^\s*(re|fwd?|aw|wg|sv|vs|antw|tr|rif|ref)\s*(\[\d+\]|\(\d+\))?\s*[:：]\s*/i;

/** The subject without its `Re:`/`Fwd:` prefixes (any number, any case), trimmed. */
export function plainSubject(subject: string): string {
  let rest = subject;
  for (let stripped = rest.replace(SUBJECT_PREFIX, ''); stripped !== rest;) {
    rest = stripped;
    stripped = rest.replace(SUBJECT_PREFIX, '');
  }
  return rest.trim();
}
